// Free ports and free loopback subnets. Several test files and engineers run at once on one machine, so
// nothing here assumes a fixed address: a subnet is picked at random, locked with a file, and its ports probed.
import { createServer } from "node:net";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomInt } from "node:crypto";
import { isProcessAlive, removeOnExit } from "./processes.ts";

/** Whether `host:port` can be bound right now. */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** The lowest port freePort hands out: below it sit the components' default ports (2379, 6443, 10250-10259...). */
const LOWEST_PORT = 20_000;
/** Where freePort looks when the machine's ephemeral range leaves too little room below it (Linux's default range). */
const FALLBACK_PORTS: readonly [number, number] = [LOWEST_PORT, 32_767];

/**
 * The ports freePort picks from: those below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range),
 * which it gives to outgoing connections and to binds of port 0. A port from that range is only free until the
 * next outgoing connection of any process here (the API servers, etcd and controllers the tests run make
 * thousands, all from 127.0.0.1) takes it; below the range only an explicit bind can.
 */
export function portsBelowEphemeralRange(rangeText?: string): readonly [number, number] {
  let text = rangeText;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8");
    } catch {
      return FALLBACK_PORTS;
    }
  }
  const low = Number(text.trim().split(/\s+/)[0]);
  if (!Number.isInteger(low) || low - 1 - LOWEST_PORT < 2_000) return FALLBACK_PORTS;
  return [LOWEST_PORT, low - 1];
}

export const portLockDir = join(tmpdir(), "quorum-port-locks");

/**
 * A port on `host` that is free now, below the ephemeral range, and handed out to no other live test process
 * (claimPort): make test runs two test files at a time.
 */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const [low, high] = portsBelowEphemeralRange();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = randomInt(low, high + 1);
    if (await claimPort(host, port)) return port;
  }
  throw new Error(`no free port on ${host} in ${low}-${high} after 200 attempts: is something binding most of them?`);
}

/**
 * Claims `port` for this process if it can be bound on `host` now and no other live process claimed it: a lock
 * file holding this process's PID, removed when it exits (a dead PID's lock is stale and taken over), keeps a
 * test file running beside this one from picking the port before whatever this one starts binds it. Locked by
 * port alone, since a bind to 0.0.0.0 takes the port on every address. The lock also keeps this process from handing
 * out one port twice: a lock holding a live PID, its own included, is never taken.
 */
export async function claimPort(host: string, port: number): Promise<boolean> {
  mkdirSync(portLockDir, { recursive: true });
  const lockFile = join(portLockDir, `${port}.lock`);
  if (!takeLock(lockFile)) return false;
  if (!(await isPortFree(host, port))) {
    releaseLock(lockFile);
    return false;
  }
  removeOnExit(lockFile);
  return true;
}

/** A /24 of the loopback network reserved for one test object (e.g. one etcd cluster). */
export interface LoopbackSubnet {
  /** "127.a.b" */
  readonly prefix: string;
  /** The address ending in `hostNumber` (1..254). */
  address(hostNumber: number): string;
  release(): void;
}

const lockDir = join(tmpdir(), "quorum-loopback-locks");

/**
 * Reserves a random 127.a.b.0/24 (a ≠ 0, so 127.0.0.x stays free for everything else) whose addresses
 * .1 to .`hosts` have every port in `ports` free. A lock file holding this process's PID keeps other test
 * processes away; a lock whose PID is dead is stale and taken over.
 */
export async function reserveLoopbackSubnet(options: { hosts: number; ports: number[] }): Promise<LoopbackSubnet> {
  mkdirSync(lockDir, { recursive: true });
  for (let attempt = 0; attempt < 100; attempt++) {
    const prefix = `127.${randomInt(1, 255)}.${randomInt(0, 256)}`;
    const lockFile = join(lockDir, `${prefix}.lock`);
    if (!takeLock(lockFile)) continue;
    const release = () => releaseLock(lockFile);
    const address = (hostNumber: number) => {
      if (!Number.isInteger(hostNumber) || hostNumber < 1 || hostNumber > 254) {
        throw new Error(`loopback host number ${hostNumber} is outside 1..254`);
      }
      return `${prefix}.${hostNumber}`;
    };
    let allFree = true;
    for (let host = 1; host <= options.hosts && allFree; host++) {
      for (const port of options.ports) {
        if (!(await isPortFree(address(host), port))) {
          allFree = false;
          break;
        }
      }
    }
    if (!allFree) {
      release();
      continue;
    }
    const unregister = removeOnExit(lockFile);
    return {
      prefix,
      address,
      release: () => {
        unregister();
        release();
      },
    };
  }
  throw new Error(
    `could not reserve a loopback /24 with ports ${options.ports.join(",")} free after 100 random tries: ` +
      `remove stale locks in ${lockDir} or stop leftover etcd processes (pgrep -a etcd)`,
  );
}

function takeLock(lockFile: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockFile, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      let owner = NaN;
      try {
        owner = Number(readFileSync(lockFile, "utf8"));
      } catch {
        // Removed between our open and read: try again.
      }
      if (Number.isInteger(owner) && owner > 0 && isProcessAlive(owner)) return false;
      rmSync(lockFile, { force: true });
    }
  }
  return false;
}

function releaseLock(lockFile: string): void {
  try {
    if (Number(readFileSync(lockFile, "utf8")) === process.pid) rmSync(lockFile, { force: true });
  } catch {
    // Already gone.
  }
}

/**
 * Runs `start` again (up to `attempts` times) when it failed because a port it picked was taken meanwhile:
 * a free port is only free until someone binds it, and several test runs share this machine.
 */
export async function retryOnPortConflict<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      const conflict = /address already in use|bind: address|EADDRINUSE/i.test((error as Error).message);
      if (!conflict || attempt >= attempts) throw error;
    }
  }
}

export interface HttpGetOptions {
  /** PEM; for https URLs with a private CA. */
  ca?: string;
  /** PEM client certificate and key, for servers that require client-certificate auth. */
  cert?: string;
  key?: string;
  /** TLS server name to verify instead of the URL's host (e.g. when the host is an IP address). */
  servername?: string;
  /** false: accept any server certificate (only for probing a process's self-signed health endpoint). */
  rejectUnauthorized?: boolean;
  timeoutMs?: number;
}

/** GET over http or https (by the URL's scheme), for readiness probes. Rejects on network errors only. */
export function httpGet(url: string, options: HttpGetOptions = {}): Promise<{ status: number; body: string }> {
  const { timeoutMs = 3_000, ...tls } = options;
  return new Promise((resolve, reject) => {
    const onResponse = (response: IncomingMessage) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      response.on("error", reject);
    };
    const request = url.startsWith("https:")
      ? httpsRequest(url, { ...tls, timeout: timeoutMs }, onResponse)
      : httpRequest(url, { timeout: timeoutMs }, onResponse);
    request.on("timeout", () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on("error", reject);
    request.end();
  });
}
