"""The course on a JupyterHub: the demo/test deployment of hub/jupyterhub_config.py.

    roster.py    the people (hub/roster.csv): instructors, TAs, students
    accounts.py  their Unix accounts (and the shared grader account), made and removed again
    layout.py    where a deployment keeps things (environments, bundle copy, exchange, course folder)
    envs.py      the two Python environments: students' (the student install only), graders' (full bundle)
    deploy.py    laying a deployment out with the right owners and permissions
    lti_settings.py  COURSE_HUB_LOGIN=lti: the hub's login from the LMS, configured from the course's c.LMS
    lti_login.py     that login: JupyterHub's LTI 1.3 authenticator with the checks it lacks
    lti_nonces.py    the launches' used nonces, each accepted once
    server.py    starting and stopping JupyterHub (with configurable-http-proxy) on localhost
    __main__.py  `make hub`: all of the above with demo accounts, until Ctrl-C

Everything here runs as root (LocalProcessSpawner starts each user's server as that user).
"""
