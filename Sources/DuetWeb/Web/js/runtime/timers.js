// The engine's timers on the real clock. A generation per schedule makes a late firing of a
// cancelled or rescheduled timer harmless.

export class TimerTable {
  constructor(onFire) {
    this.onFire = onFire;
    this.timers = new Map();
    this.generation = 0;
  }

  schedule(id, afterMs) {
    this.cancel(id);
    const generation = ++this.generation;
    const handle = setTimeout(() => {
      if (this.timers.get(id)?.generation !== generation) return;
      this.timers.delete(id);
      this.onFire(id);
    }, afterMs);
    this.timers.set(id, { generation, handle });
  }

  cancel(id) {
    const timer = this.timers.get(id);
    if (timer) clearTimeout(timer.handle);
    this.timers.delete(id);
  }

  cancelAll() {
    for (const id of [...this.timers.keys()]) this.cancel(id);
  }

  get scheduled() { return [...this.timers.keys()]; }
}
