// course-deadlines: a JupyterLab extension written by hand (the hub has no npm registry to build
// one with), in the shape JupyterLab's loader expects of a federated extension's entry
// (window._JUPYTERLAB[name] with init and get; it shares and imports no module), like
// course-feedback-link beside it.
//
// nbgrader's Assignments tab shows no due date. This labels each assignment row of the course
// (released, fetched, submitted) with the student's own deadline: in the browser's local time, in
// the course's time zone, and "extended" where an extension applies. The deadlines come from the
// student's own server (GET <base>course/deadlines, course_student/lab_deadlines.py), which asks the
// grading service with the server's hub token: the answer is this student's only. Where the
// server cannot tell ({"known": false}: no grading service, a self-paced copy), no label is shown.
// Every text is set as text, never as HTML.
(function () {
  "use strict";
  var ROUTE = "course/deadlines";
  var ASK_AGAIN_MS = 60 * 1000;   // an extension granted meanwhile shows at the next refresh after this
  var LISTS = ["#released_assignments_list", "#fetched_assignments_list", "#submitted_assignments_list"];
  var LABEL = "course-deadline";
  var TAB = "nbgrader-assignment-list";   // the Assignments tab's element id

  // "2027-03-29 14:00" in ``zone`` (an IANA name; undefined: the browser's own zone).
  function written(date, zone) {
    var options = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
                    hourCycle: "h23" };
    if (zone) {
      options.timeZone = zone;
    }
    var part = {};
    new Intl.DateTimeFormat("en-US", options).formatToParts(date).forEach(function (p) { part[p.type] = p.value; });
    return part.year + "-" + part.month + "-" + part.day + " " + part.hour + ":" + part.minute;
  }

  // The label's text for one assignment of the answer.
  function labelText(deadline, zone) {
    if (!deadline.due) {
      return "No deadline";
    }
    var due = new Date(deadline.due);
    var course = zone || "UTC";
    return "Your deadline: " + written(due) + " your time (" + written(due, course) + " " + course + ")" +
      (deadline.extended ? ", extended" : "");
  }

  function rowsOf(root) {
    var rows = [];
    LISTS.forEach(function (list) {
      root.querySelectorAll(list + " > .list_item").forEach(function (row) { rows.push(row); });
    });
    return rows;
  }

  // Label each row of ``answer``'s course whose assignment it lists (nbgrader builds the rows
  // afresh at each refresh); a row labelled from an earlier answer gets the new text in place.
  function label(root, answer) {
    rowsOf(root).forEach(function (row) {
      var name = row.querySelector(":scope > .col-md-12 > .item_name");
      var course = row.querySelector(":scope > .col-md-12 > .item_course");
      if (!name || !name.firstElementChild) {
        return;
      }
      var assignment = name.firstElementChild.textContent.trim();
      var deadline = answer.assignments[assignment];
      if (!deadline || (course && answer.course_id && course.textContent.trim() !== answer.course_id)) {
        return;
      }
      var tag = name.querySelector("." + LABEL) || document.createElement("div");
      var className = LABEL + (deadline.extended ? " " + LABEL + "-extended" : "");
      var text = labelText(deadline, answer.zone);
      if (tag.parentNode && tag.className === className && tag.textContent === text) {
        return;   // as it is: changing nothing here keeps the observer below from waking again
      }
      tag.className = className;
      tag.style.fontSize = "85%";
      tag.style.opacity = "0.8";
      tag.setAttribute("data-due", deadline.due || "");
      tag.textContent = text;
      if (!tag.parentNode) {
        name.appendChild(tag);
      }
    });
  }

  var plugin = {
    id: "course-deadlines:label",
    description: "Each assignment in the Assignments tab shows the student's own deadline.",
    autoStart: true,
    activate: function (app) {
      var settings = app.serviceManager.serverSettings;
      var answer = null, askedAt = 0, asking = false;

      function ask() {
        asking = true;
        askedAt = Date.now();
        var headers = {};
        if (settings.token) {
          headers.Authorization = "token " + settings.token;
        }
        var send = settings.fetch || window.fetch;
        send.call(window, settings.baseUrl.replace(/\/?$/, "/") + ROUTE, { credentials: "same-origin", headers: headers })
          .then(function (response) { return response.json(); })
          .then(function (got) {
            answer = got && got.known ? got : null;
            if (got && !got.known && got.why) {
              console.info("course-deadlines: no deadlines shown: " + got.why);
            }
          })
          .catch(function (err) { console.warn("course-deadlines: asking " + ROUTE, err); })
          .then(function () { asking = false; look(); });
      }

      // Rows are labelled as soon as nbgrader has built them, from the last answer, before the
      // browser draws them: a label added later pushed every row below it down by a line, under
      // a pointer about to click Fetch Feedback or Submit (the hub test lost such clicks). A new
      // answer is asked for at most every ASK_AGAIN_MS, after a refresh, and changes the labels'
      // text in place.
      function look() {
        if (!document.getElementById(TAB)) {
          return;
        }
        var rows = rowsOf(document);
        if (!rows.length) {
          return;
        }
        // Rows without a label: nbgrader has just rebuilt its lists (a refresh), the moment to
        // ask again for an answer older than ASK_AGAIN_MS (an extension granted meanwhile).
        var rebuilt = rows.some(function (row) { return !row.querySelector("." + LABEL); });
        if (answer) {
          label(document, answer);
        }
        if (rebuilt && !asking && Date.now() - askedAt > ASK_AGAIN_MS) {
          ask();
        }
      }

      ask();   // at once, so the answer is there when the student first opens the tab
      // A MutationObserver's callback runs after the change that woke it and before the page is
      // drawn again; a look is a few selector queries.
      new MutationObserver(look).observe(document.body, { childList: true, subtree: true });
    }
  };

  var container = {
    init: function () { return Promise.resolve(); },
    get: function (module) {
      if (module !== "./extension") {
        return Promise.reject(new Error("course-deadlines has no module " + module));
      }
      return Promise.resolve(function () { return { __esModule: true, default: [plugin] }; });
    }
  };
  var registry = (window._JUPYTERLAB = window._JUPYTERLAB || {});
  registry["course-deadlines"] = container;
})();
