// A machine on a virtual clock (port of Tests/DuetClientTests/Support/VirtualTime.swift): timer
// commands are recorded as deadlines, and advancing time fires them, in deadline order, back into the
// machine. A 15 s timeout is tested in microseconds.

export const WEB_JS = new URL('../../../Sources/DuetWeb/Web/js/', import.meta.url);

export class Driven {
  constructor(machine, fire = (m, timer) => m.handle({ type: 'timerFired', timer })) {
    this.machine = machine;
    this.fire = fire;
    this.nowMs = 0;
    this.deadlines = new Map();
  }

  /** Delivers an event now: `send(m => m.handle(...))` or `send({type:...})`. */
  send(deliver) {
    const actions = typeof deliver === 'function' ? deliver(this.machine) : this.machine.handle(deliver);
    this.#apply(actions);
    return actions;
  }

  /** Moves the clock forward; returns every action produced by timers that fired on the way. */
  advance(ms) {
    const target = this.nowMs + ms;
    const produced = [];
    for (;;) {
      let next = null;
      for (const [timer, deadline] of this.deadlines) {
        if (deadline > target) continue;
        if (next == null || deadline < next[1] || (deadline === next[1] && timer < next[0])) next = [timer, deadline];
      }
      if (next == null) break;
      this.nowMs = next[1];
      this.deadlines.delete(next[0]);
      const actions = this.fire(this.machine, next[0]);
      this.#apply(actions);
      produced.push(...actions);
    }
    this.nowMs = target;
    return produced;
  }

  isScheduled(timer) { return this.deadlines.has(timer); }
  remaining(timer) { return this.deadlines.has(timer) ? this.deadlines.get(timer) - this.nowMs : undefined; }

  #apply(actions) {
    for (const action of actions) {
      if (action.type !== 'timer') continue;
      const command = action.command;
      if (command.type === 'schedule') this.deadlines.set(command.timer, this.nowMs + command.afterMs);
      else this.deadlines.delete(command.timer);
    }
  }
}

/** Does `actions` contain an action deep-equal to `expected` (its listed fields)? */
export function has(actions, expected) {
  return actions.some((action) => matches(action, expected));
}

function matches(value, expected) {
  if (expected === null || typeof expected !== 'object') return Object.is(value, expected);
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(expected)) {
    return Array.isArray(value) && value.length === expected.length && expected.every((item, i) => matches(value[i], item));
  }
  return Object.keys(expected).every((key) => matches(value[key], expected[key]));
}

export const sched = (timer, afterMs) => ({ type: 'timer', command: { type: 'schedule', timer, afterMs } });
export const canc = (timer) => ({ type: 'timer', command: { type: 'cancel', timer } });
