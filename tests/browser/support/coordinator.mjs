// The real benchfleet-coordinator as a child process on loopback, for the browser tests.
//
//   const coord = await startCoordinator({ binary, webRoot });   // 127.0.0.1, a free port
//   coord.url                                                     // "http://127.0.0.1:PORT"
//   await coord.stop();                                           // SIGTERM, then SIGKILL
//
// Each coordinator gets a temporary directory (database, port file, log) and the fixed tokens
// below. Every started process is killed when this node process exits, however it exits
// (normal end, uncaught error, SIGINT/SIGTERM from ctest's timeout), so no server outlives a test.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, openSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const OPERATOR_TOKEN = "browser-operator-token-0123456789";
export const ENROLLMENT_TOKEN = "browser-enrollment-token-0123456789";

const live = new Set();
function killAll() {
  for (const child of live) {
    try { child.kill("SIGKILL"); } catch { /* already gone */ }
  }
  live.clear();
}
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => { killAll(); process.exit(128 + (signal === "SIGINT" ? 2 : 15)); });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Coordinator {
  constructor({ binary, webRoot, dir, port = 0, extraFlags = [] }) {
    this.binary = binary;
    this.webRoot = webRoot;
    this.dir = dir;
    this.fixedPort = port;
    this.extraFlags = extraFlags;
    this.child = null;
    this.port = 0;
  }

  get url() { return `http://127.0.0.1:${this.port}`; }
  get logPath() { return join(this.dir, "coordinator.log"); }
  get dbPath() { return join(this.dir, "benchfleet.db"); }

  // Starts the process and waits (at most 15 s) for its port file.
  async start() {
    if (this.child) throw new Error("coordinator already running");
    const portFile = join(this.dir, "port");
    rmSync(portFile, { force: true });
    const log = openSync(this.logPath, "a");
    const args = [
      "--listen", `127.0.0.1:${this.fixedPort}`,
      "--port-file", portFile,
      "--db", this.dbPath,
      "--operator-token", OPERATOR_TOKEN,
      "--enrollment-token", ENROLLMENT_TOKEN,
      "--long-poll-timeout-s", "2",
      "--log-level", "warn",
      ...(this.webRoot ? ["--web-root", this.webRoot] : []),
      ...this.extraFlags,
    ];
    // A clean environment: a developer's BENCHFLEET_* settings must not change the test.
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: this.dir, TZ: "UTC" };
    const child = spawn(this.binary, args, { env, stdio: ["ignore", log, log] });
    live.add(child);
    this.child = child;
    let exited = null;
    child.once("exit", (code, signal) => { exited = { code, signal }; live.delete(child); });
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`coordinator exited during start (${JSON.stringify(exited)}):\n${this.logTail()}`);
      if (existsSync(portFile)) {
        const text = readFileSync(portFile, "utf8").trim();
        if (/^\d+$/.test(text)) {
          this.port = Number(text);
          return this;
        }
      }
      await sleep(25);
    }
    this.kill();
    throw new Error(`coordinator did not write its port file within 15 s:\n${this.logTail()}`);
  }

  // SIGTERM, then SIGKILL after `graceMs`.
  async stop(graceMs = 5000) {
    const child = this.child;
    if (!child) return;
    this.child = null;
    if (child.exitCode !== null || child.signalCode !== null) { live.delete(child); return; }
    const done = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await done;
    clearTimeout(timer);
    live.delete(child);
  }

  // SIGKILL now: the coordinator disappears as in a crash.
  kill() {
    if (!this.child) return;
    try { this.child.kill("SIGKILL"); } catch { /* gone */ }
    live.delete(this.child);
    this.child = null;
  }

  logTail(bytes = 4000) {
    try {
      const text = readFileSync(this.logPath, "utf8");
      return text.slice(-bytes);
    } catch { return "(no log)"; }
  }

  removeDir() { rmSync(this.dir, { recursive: true, force: true }); }
}

// A started coordinator in a fresh temporary directory.
export async function startCoordinator({ binary, webRoot, port = 0, extraFlags = [] }) {
  const dir = mkdtempSync(join(process.env.TMPDIR || tmpdir(), "benchfleet-browser-"));
  const coordinator = new Coordinator({ binary, webRoot, dir, port, extraFlags });
  await coordinator.start();
  return coordinator;
}
