// Keyboard shortcuts of the call page, one table: the keydown handler and the help overlay (`?`) both read it,
// so the overlay never lists a key that does nothing. Letters only act when no field takes the typing and no
// modifier is held (Ctrl+M and friends belong to the browser and the system).

export function isTypingTarget(target) {
  if (!target || typeof target !== 'object') return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName?.toLowerCase();
  if (tag === 'textarea' || tag === 'select') return true;
  if (tag !== 'input') return false;
  // Checkboxes and buttons do not take text: a shortcut still works while one has the focus.
  return !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color'].includes((target.type ?? 'text').toLowerCase());
}

// The shortcut an event asks for, or null: `shortcuts` is [{key, ...}] with `key` as KeyboardEvent.key.
export function shortcutFor(event, shortcuts) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return null;
  if (isTypingTarget(event.target)) return null;
  const key = event.key?.length === 1 ? event.key.toLowerCase() : event.key;
  return shortcuts.find((s) => s.key === key) ?? null;
}

// shortcuts: [{key, keyLabel, label, run, available?, listOnly?}] — `available()` false hides it from help and
// ignores it; listOnly: shown in help, handled elsewhere (Escape, which dialogs and panels handle themselves).
export function bindShortcuts({ shortcuts, dialog, list, opener }) {
  const usable = () => shortcuts.filter((s) => !s.available || s.available());
  addEventListener('keydown', (event) => {
    if (dialog?.open) return;  // the open overlay has the keyboard (Escape closes it)
    const shortcut = shortcutFor(event, usable().filter((s) => !s.listOnly));
    if (!shortcut) return;
    event.preventDefault();
    shortcut.run(event);
  });
  const show = () => {
    list.replaceChildren(...usable().map((s) => {
      const row = document.createElement('tr');
      const key = document.createElement('td');
      const kbd = document.createElement('kbd');
      kbd.textContent = s.keyLabel ?? s.key.toUpperCase();
      key.append(kbd);
      const what = document.createElement('td');
      what.textContent = s.label;
      row.append(key, what);
      return row;
    }));
    if (typeof dialog.showModal === 'function') dialog.showModal(); else dialog.setAttribute('open', '');
  };
  opener?.addEventListener('click', show);
  // The dialog gives focus back to what opened it when it closes.
  dialog?.addEventListener('close', () => document.activeElement === document.body && opener?.focus());
  return { show };
}
