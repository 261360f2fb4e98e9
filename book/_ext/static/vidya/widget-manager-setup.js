/* vidya-lab: runs before require.js and the ipywidgets HTML manager on pages that show widgets.
 *
 * 1. The manager (embed-amd.js) finds its icon fonts next to its own AMD module URL; without a path
 *    for that module, require.js resolves it against the page's folder and every font is a 404.
 *    A global `require` object defined before require.js loads is require.js's configuration.
 * 2. The widget controls typeset their labels with the MathJax 2 API (`MathJax.Hub.Queue`); the book
 *    loads MathJax 3, which has no `Hub`, so rendering a labelled widget threw a TypeError.
 *    We give MathJax 3 a `Hub.Queue` that typesets the element with the MathJax 3 API.
 */
(function () {
  "use strict";
  var src = document.currentScript ? document.currentScript.src : "";
  var root = src.slice(0, src.lastIndexOf("/vidya/") + 1); // .../_static/
  if (root) {
    window.require = {
      paths: { "@jupyter-widgets/html-manager/dist": root + "offline/html-manager" },
    };
  }
  document.addEventListener("DOMContentLoaded", function () {
    var mj = window.MathJax;
    if (!mj || mj.Hub || !mj.version) {
      return;
    }
    mj.Hub = {
      Queue: function (command) {
        var element = command && command[2];
        var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
        ready.then(function () {
          return mj.typesetPromise(element ? [element] : undefined);
        }).catch(function (err) {
          console.warn("MathJax could not typeset a widget label:", err);
        });
      },
    };
  });
})();
