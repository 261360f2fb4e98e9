/* vidya-lab: runs before require.js and the ipywidgets HTML manager on pages that show widgets.
 *
 * 1. The manager (embed-amd.js) finds its icon fonts next to the URL of the AMD module asking for
 *    them; without paths for its modules, require.js resolves them against the page's folder and
 *    every font is a 404 (seen with the html-manager and the controls modules).
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
    // Every AMD module embed-amd.js defines (and whose webpack chunk may ask for a font) gets a
    // URL inside offline/html-manager/, so its folder is the fonts' folder. They are all defined
    // inline by embed-amd.js, so require.js never fetches these URLs.
    var folder = root + "offline/html-manager/";
    var paths = { "@jupyter-widgets/html-manager/dist": folder.slice(0, -1) };
    ["base", "base7", "controls", "controls7", "html-manager"].forEach(function (name) {
      paths["@jupyter-widgets/" + name] = folder + name;
    });
    window.require = { paths: paths };
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
