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
(function () {
  "use strict";
  var FEEDBACK_FOLDER = /(^|\/)feedback\/[^/]+\/?$/;

  function filesUrl(baseUrl, path) {
    return baseUrl.replace(/\/?$/, "/") + "files/" + path.split("/").map(encodeURIComponent).join("/");
  }

  var plugin = {
    id: "course-feedback-link:open",
    description: "(view feedback) in the Assignments tab opens the feedback page, typeset, in a tab of its own.",
    autoStart: true,
    activate: function (app) {
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
