// One polling lifecycle for the views that follow live data (runs, a run, agents, schedules).
// `load(current)` fetches and renders; it calls current() after each await and drops its answer
// when that says false (the view was left, or a newer load started), and returns whether to poll
// again. now() loads at once (a pending poll is cancelled); stop() ends it for good.
export class Poller {
  constructor(intervalMs, load) {
    this.intervalMs = intervalMs;
    this.load = load;
    this.timer = null;
    this.seq = 0;
    this.stopped = false;
  }

  async now() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped) return;
    const seq = ++this.seq;
    const current = () => !this.stopped && seq === this.seq;
    const again = await this.load(current);
    if (again && current()) this.later();
  }

  later() {
    clearTimeout(this.timer);
    if (!this.stopped) this.timer = setTimeout(() => this.now(), this.intervalMs);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
