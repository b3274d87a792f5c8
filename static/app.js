// Herald console behaviour that htmx does not cover.
(function () {
  "use strict";
  // Ask before destructive actions: any form or button with data-confirm.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  }, true);
  // Tick every checkbox of a group: <input type="checkbox" data-check-all="name">.
  document.addEventListener("change", function (e) {
    var group = e.target.getAttribute && e.target.getAttribute("data-check-all");
    if (!group) { return; }
    document.querySelectorAll('input[type=checkbox][name="' + group + '"]').forEach(function (box) {
      if (!box.disabled) { box.checked = e.target.checked; }
    });
  });
  // Print the page: <button data-print>.
  document.addEventListener("click", function (e) {
    if (e.target.hasAttribute && e.target.hasAttribute("data-print")) { window.print(); }
  });
  // Copy a field's value: <button data-copy="#field">.
  document.addEventListener("click", function (e) {
    var sel = e.target.getAttribute && e.target.getAttribute("data-copy");
    if (!sel) { return; }
    var field = document.querySelector(sel);
    if (!field) { return; }
    field.select();
    var done = function () { e.target.textContent = e.target.getAttribute("data-copied") || "✓"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
    } else {
      document.execCommand("copy");
      done();
    }
  });
  // A silence matcher's value offers the values of the name chosen beside it.
  document.addEventListener("change", function (e) {
    var of = e.target.getAttribute && e.target.getAttribute("data-values-of");
    var input = of && document.getElementById(of);
    if (input) { input.setAttribute("list", "matcher-values-" + e.target.value); }
  });
  // Submit a form when its select changes: <select data-autosubmit> (the language switch).
  document.addEventListener("change", function (e) {
    if (e.target.hasAttribute && e.target.hasAttribute("data-autosubmit") && e.target.form) { e.target.form.submit(); }
  });
  // The navigation folds behind a menu button on narrow screens; without script it
  // stays open (the class below is what folds it).
  document.documentElement.classList.add("js");
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest(".menu-toggle");
    if (!button) { return; }
    var nav = document.getElementById(button.getAttribute("aria-controls"));
    var open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", open ? "true" : "false");
    nav.classList.toggle("open", open);
  });
  // A group of the navigation opens under its name on a click, and closes on a second
  // click, on a click elsewhere, or on Escape.
  function closeGroups(except) {
    document.querySelectorAll(".nav-group.open").forEach(function (g) {
      if (g === except) { return; }
      g.classList.remove("open");
      g.querySelector(".nav-group-toggle").setAttribute("aria-expanded", "false");
    });
  }
  document.addEventListener("click", function (e) {
    var toggle = e.target.closest && e.target.closest(".nav-group-toggle");
    var group = toggle && toggle.parentElement;
    closeGroups(group);
    if (!group) { return; }
    var open = !group.classList.contains("open");
    group.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { closeGroups(null); }
  });
  // Escape folds an open menu and gives the focus back to its button.
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") { return; }
    var button = document.querySelector('.menu-toggle[aria-expanded="true"]');
    if (!button) { return; }
    button.setAttribute("aria-expanded", "false");
    document.getElementById(button.getAttribute("aria-controls")).classList.remove("open");
    button.focus();
  });
  // A page that answers a form's POST (a secret shown once, a form with its errors, a
  // result) stands in the history as the form's own page: a reload reads that page
  // instead of sending the form again.
  var replace = document.body && document.body.getAttribute("data-replace-url");
  if (replace && replace.charAt(0) === "/" && replace.charAt(1) !== "/") {
    window.history.replaceState(null, "", replace);
  }
  // At phone width the month view is one long column of days: open it at today, not at
  // the first of the month (the wide grid shows the whole month at once and stays put).
  document.addEventListener("DOMContentLoaded", function () {
    var today = document.querySelector(".month .month-day.today");
    if (today && window.matchMedia("(max-width: 760px)").matches && !location.hash) {
      today.scrollIntoView({ block: "start" });
    }
  });
  // A list that reloads itself (<div data-pause-on-select hx-trigger="every 5s">) holds
  // back while the operator selects in it, so that a reload never undoes a selection: a
  // checkbox of it ticked, text of it selected, or the mouse held down on it (a
  // selection in progress). The poll keeps ticking and reloads again once the selection
  // is cleared.
  var pressed = null;
  document.addEventListener("mousedown", function (e) {
    pressed = e.target.closest ? e.target.closest("[data-pause-on-select]") : null;
  });
  document.addEventListener("mouseup", function () { pressed = null; });
  var selecting = function (list) {
    if (pressed === list || list.querySelector("input[type=checkbox]:checked")) { return true; }
    var sel = window.getSelection();
    return !!sel && !sel.isCollapsed && sel.rangeCount > 0 &&
      (list.contains(sel.getRangeAt(0).commonAncestorContainer) || sel.containsNode(list, true));
  };
  document.addEventListener("htmx:beforeRequest", function (e) {
    var list = e.detail && e.detail.elt;
    if (list && list.hasAttribute && list.hasAttribute("data-pause-on-select") && selecting(list)) { e.preventDefault(); }
  });
  // Every htmx request a person made shows that it is working: the element that made
  // it is aria-busy until the answer comes, and its buttons, when it was a click or a
  // submit, disabled (so a second press sends nothing twice); the page's working
  // indicator (#working, app.css) shows once the request has lasted 300 ms. Lists that reload themselves (hx-trigger
  // "every …") are nobody's wait and show nothing.
  var working = 0;
  var ownButtons = function (elt) {
    if (elt.matches("button")) { return [elt]; }
    return Array.prototype.slice.call(elt.querySelectorAll("button"));
  };
  document.addEventListener("htmx:beforeSend", function (e) {
    var elt = e.detail && e.detail.elt;
    if (!elt || !elt.matches || /^\s*every\s/.test(elt.getAttribute("hx-trigger") || "")) { return; }
    // Only a click or a submit is a person pressing a button; a form that previews as
    // its fields change keeps its buttons.
    var how = e.detail.requestConfig && e.detail.requestConfig.triggeringEvent;
    var pressed = how && (how.type === "click" || how.type === "submit");
    var held = pressed ? ownButtons(elt).filter(function (b) { return !b.disabled; }) : [];
    held.forEach(function (b) { b.disabled = true; });
    elt.setAttribute("aria-busy", "true");
    working++;
    document.documentElement.classList.add("htmx-working");
    var done = function (end) {
      if (end.detail.elt !== elt) { return; }
      elt.removeEventListener("htmx:afterRequest", done);
      held.forEach(function (b) { b.disabled = false; });
      elt.removeAttribute("aria-busy");
      if (--working === 0) { document.documentElement.classList.remove("htmx-working"); }
    };
    elt.addEventListener("htmx:afterRequest", done);
  });
  // Select a read-only value on focus so it can be copied at once: <input data-select-on-focus>.
  document.addEventListener("focusin", function (e) {
    if (e.target.hasAttribute && e.target.hasAttribute("data-select-on-focus")) { e.target.select(); }
  });
})();
