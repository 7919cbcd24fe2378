// course-feedback-link: a JupyterLab extension written by hand (the hub has no npm registry to
// build one with), in the shape JupyterLab's loader expects of a federated extension's entry
// (window._JUPYTERLAB[name] with init and get; it shares and imports no module).
//
// nbgrader's Assignments tab binds "(view feedback)" to filebrowser:go-to-path on the folder
// <assignment>/feedback/<timestamp>/, which only moves the file browser there; the page then has
// to be opened, and JupyterLab's HTML viewer shows it untrusted, its math as raw TeX. After that
// command, on such a folder only, this opens each of its pages in a browser tab of its own from
// the server's /files/, which the server serves sandboxed (an origin of its own, no cookies, no
// API) and where the page's MathJax, served by the server itself, typesets it. Nothing is
// trusted: the HTML viewer's trust setting stays as it is for every other file.
//
// Feedback in one round: while the grading service has only its queue page for the submission
// (a page with <meta name="course-feedback-pending" content="COURSE ASSIGNMENT">, which reloads
// itself every few seconds), this fetches the feedback again, as the Assignments tab's Fetch
// Feedback does (nbgrader's POST assignments/fetch_feedback), every FETCH_EVERY_MS until the
// fetched page is no longer the queue's, for at most FETCH_FOR_MS. The tab it opened then shows
// the graded page at its next reload: one click on (view feedback) is enough.
//
// Graded while it was fetched: nbgrader's Assignments tab lists a submission as "(feedback
// available to fetch)", without a (view feedback) link, when the student's copy differs from the
// exchange's page. That happens when the grading service replaces its queue page with the graded
// page after a Fetch Feedback copied the queue page and before the student opened it. Within ASKED_FOR_MS of a
// student's click on a Fetch Feedback button, this clicks that assignment's Fetch Feedback button
// again for each such row (nbgrader's own request and refresh), at most AUTO_FETCHES times per
// submission and page load, so the one Fetch Feedback the student asked for ends with a (view
// feedback) link. Feedback released later (the final grading) still waits for the student's click.
(function () {
  "use strict";
  var FEEDBACK_FOLDER = /(^|\/)feedback\/[^/]+\/?$/;
  var PENDING = /<meta name="course-feedback-pending" content="([^" ]+) ([^" ]+)">/;
  var FETCH_EVERY_MS = 5000;
  var FETCH_FOR_MS = 15 * 60 * 1000;
  var fetching = {};   // page path -> true while it is fetched again
  var AVAILABLE = "(feedback available to fetch)";   // nbgrader's text on such a row
  var ASKED_FOR_MS = 60 * 1000;
  var AUTO_FETCHES = 2;
  var askedAt = 0;       // the last click on a Fetch Feedback button (Date.now())
  var autoFetched = {};  // "assignment|timestamp" -> how many times this fetched it again

  function filesUrl(baseUrl, path) {
    return baseUrl.replace(/\/?$/, "/") + "files/" + path.split("/").map(encodeURIComponent).join("/");
  }

  function cookie(name) {
    var found = document.cookie.match("\\b" + name + "=([^;]*)\\b");
    return found ? decodeURIComponent(found[1]) : "";
  }

  // nbgrader's Fetch Feedback, as the Assignments tab sends it (JupyterLab's own requests carry
  // the same XSRF cookie and token).
  function fetchFeedback(settings, course, assignment) {
    var headers = { "Content-Type": "application/json", "X-XSRFToken": cookie("_xsrf") };
    if (settings.token) {
      headers.Authorization = "token " + settings.token;
    }
    // settings.fetch is window.fetch (or a stand-in): called as a method of settings it would
    // throw "Illegal invocation".
    var send = settings.fetch || window.fetch;
    return send.call(window, settings.baseUrl.replace(/\/?$/, "/") + "assignments/fetch_feedback", {
      method: "POST", credentials: "same-origin", headers: headers,
      body: JSON.stringify({ course_id: course, assignment_id: assignment })
    });
  }

  function untilGraded(app, path, course, assignment) {
    if (fetching[path]) {
      return;
    }
    fetching[path] = true;
    var settings = app.serviceManager.serverSettings;
    var stopAt = Date.now() + FETCH_FOR_MS;
    function again() {
      if (Date.now() > stopAt) {
        delete fetching[path];
        return;
      }
      fetchFeedback(settings, course, assignment).then(function () {
        return app.serviceManager.contents.get(path, { content: true, format: "text" });
      }).then(function (file) {
        if (PENDING.test(String(file.content || ""))) {
          window.setTimeout(again, FETCH_EVERY_MS);
        } else {
          delete fetching[path];   // the graded page is there: the tab shows it at its next reload
        }
      }).catch(function (err) {
        console.warn("course-feedback-link: fetching the feedback on " + path + " again", err);
        window.setTimeout(again, FETCH_EVERY_MS);
      });
    }
    window.setTimeout(again, FETCH_EVERY_MS);
  }

  // Each submission row of the Assignments tab that says AVAILABLE, with its assignment's row
  // (nbgrader: assignment row > .col-md-12 with the name and the button, then a container of
  // .nested_list_item rows whose .item_name starts with the submission's time).
  function availableRows() {
    var found = [];
    document.querySelectorAll("#submitted_assignments_list .nested_list_item").forEach(function (item) {
      var name = item.querySelector(".item_name");
      var row = item.parentElement && item.parentElement.parentElement;
      var title = row && row.querySelector(":scope > .col-md-12 > .item_name");
      if (name && title && title.firstElementChild && name.textContent.indexOf(AVAILABLE) >= 0) {
        found.push({ row: row, key: title.firstElementChild.textContent.trim() + "|" +
                     (name.firstChild ? name.firstChild.textContent.trim() : "") });
      }
    });
    return found;
  }

  function fetchAgainWhereGradedMeanwhile() {
    if (Date.now() - askedAt > ASKED_FOR_MS) {
      return;
    }
    availableRows().forEach(function (found) {
      var button = found.row.querySelector(":scope > .col-md-12 button");
      if (!button || button.disabled || (autoFetched[found.key] || 0) >= AUTO_FETCHES) {
        return;
      }
      autoFetched[found.key] = (autoFetched[found.key] || 0) + 1;
      button.click();
    });
  }

  function watchTheAssignmentsTab() {
    // A student's click on a submitted assignment's button (Fetch Feedback); this file's own
    // clicks count too, and AUTO_FETCHES bounds them.
    document.addEventListener("click", function (event) {
      var button = event.target && event.target.closest && event.target.closest("button");
      if (button && button.closest("#submitted_assignments_list")) {
        askedAt = Date.now();
      }
    }, true);
    var pending = false;
    // nbgrader rebuilds its lists after each request: look again after the page changes (at most
    // every 200 ms: a click here may wait that long, a label must not; see course-deadlines).
    new MutationObserver(function () {
      if (!pending) {
        pending = true;
        window.setTimeout(function () { pending = false; fetchAgainWhereGradedMeanwhile(); }, 200);
      }
    }).observe(document.body, { childList: true, subtree: true });
  }

  var plugin = {
    id: "course-feedback-link:open",
    description: "(view feedback) in the Assignments tab opens the feedback page, typeset, in a tab of its own.",
    autoStart: true,
    activate: function (app) {
      watchTheAssignmentsTab();
      app.commands.commandExecuted.connect(function (_, executed) {
        var path = (executed.args && executed.args.path) || "";
        if (executed.id !== "filebrowser:go-to-path" || !FEEDBACK_FOLDER.test(path)) {
          return;
        }
        var baseUrl = app.serviceManager.serverSettings.baseUrl;
        app.serviceManager.contents.get(path, { content: true }).then(function (folder) {
          (folder.content || []).filter(function (item) {
            return item.type === "file" && /\.html$/.test(item.name);
          }).forEach(function (item) {
            window.open(filesUrl(baseUrl, item.path), "_blank", "noopener");
            app.serviceManager.contents.get(item.path, { content: true, format: "text" }).then(function (file) {
              var pending = PENDING.exec(String(file.content || ""));
              if (pending) {
                untilGraded(app, item.path, pending[1], pending[2]);
              }
            });
          });
        }).catch(function (err) {
          console.warn("course-feedback-link: cannot list " + path, err);
        });
      });
    }
  };

  var container = {
    init: function () { return Promise.resolve(); },
    get: function (module) {
      if (module !== "./extension") {
        return Promise.reject(new Error("course-feedback-link has no module " + module));
      }
      return Promise.resolve(function () { return { __esModule: true, default: [plugin] }; });
    }
  };
  var registry = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  registry["course-feedback-link"] = container;
})();
