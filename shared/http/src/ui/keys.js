// MA2H inbox keyboard shortcuts — progressive enhancement only: every page works without this
// file. Served by the Hub itself (`/inbox/keys.js`, CSP `script-src 'self'`), no inline script.
//   lists:    j / k move between rows, Enter opens the focused row, x ticks it (bulk)
//   message:  1–9 pick that option (a select ask's radio, or focus a confirm button)
(function () {
  'use strict';
  // Keys typed into a text field are text, not shortcuts; a focused radio, checkbox or button is
  // not typing (after "2" picks an option, "1" must still pick another).
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    if (tag === 'INPUT') {
      return ['radio', 'checkbox', 'button', 'submit', 'reset'].indexOf((el.type || 'text').toLowerCase()) < 0;
    }
    return tag === 'TEXTAREA' || tag === 'SELECT' || el.isContentEditable;
  }
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll('ul.items > li a.title'));
  }
  function move(step) {
    var links = rows();
    if (links.length === 0) return false;
    var at = links.indexOf(document.activeElement);
    var next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + step));
    links.forEach(function (a) { a.parentElement.classList.remove('current'); });
    links[next].parentElement.classList.add('current');
    links[next].focus();
    links[next].scrollIntoView({ block: 'nearest' });
    return true;
  }
  function tick() {
    var row = document.querySelector('ul.items > li.current');
    var box = row && row.querySelector('input.pick');
    if (!box) return false;
    box.checked = !box.checked;
    box.dispatchEvent(new Event('change', { bubbles: true }));
    return true;
  }
  function pick(n) {
    var radios = document.querySelectorAll('form input[type=radio][name=value]');
    if (radios.length > 0) {
      if (n > radios.length) return false;
      radios[n - 1].checked = true;
      radios[n - 1].focus();
      return true;
    }
    var buttons = document.querySelectorAll('form button[name=act][value^="answer:"]');
    if (n > buttons.length) return false;
    buttons[n - 1].focus();
    return true;
  }
  document.addEventListener('keydown', function (e) {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || typing(e.target)) return;
    var handled = false;
    if (e.key === 'j') handled = move(1);
    else if (e.key === 'k') handled = move(-1);
    else if (e.key === 'x') handled = tick();
    else if (/^[1-9]$/.test(e.key)) handled = pick(Number(e.key));
    if (handled) e.preventDefault();
  });
  document.documentElement.classList.add('keys');
})();
