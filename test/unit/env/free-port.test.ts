// freePort hands out ports below the kernel's ephemeral range, so that no outgoing connection of the API servers,
// etcd members and controllers a test runs can take one between the pick and the bind.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { claimPort, freePort, isPortFree, portLockDir, portsBelowEphemeralRange } from "../../env/net.ts";

describe("freePort", () => {
  it("picks below the ephemeral range the kernel reports, and falls back when that leaves too little room", () => {
    assert.deepEqual(portsBelowEphemeralRange("32768\t60999\n"), [20_000, 32_767]);
    assert.deepEqual(portsBelowEphemeralRange("49152 65535"), [20_000, 49_151]);
    assert.deepEqual(portsBelowEphemeralRange("21000 60999"), [20_000, 32_767]);
    assert.deepEqual(portsBelowEphemeralRange("garbage"), [20_000, 32_767]);
  });

  it("hands out distinct ports that can be bound, none in the ephemeral range", async () => {
    const [low, high] = portsBelowEphemeralRange();
    const ports = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const port = await freePort();
      assert.ok(port >= low && port <= high, `${port} outside ${low}-${high}`);
      assert.ok(!ports.has(port), `${port} handed out twice`);
      ports.add(port);
    }
    const port = [...ports][0] ?? 0;
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: "127.0.0.1", port, exclusive: true }, resolve);
    });
    try {
      assert.equal(await isPortFree("127.0.0.1", port), false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("does not hand out a port another live test process claimed, and takes over the claim of a dead one", async () => {
    const [low, high] = portsBelowEphemeralRange();
    let port = low;
    while (!(await isPortFree("127.0.0.1", port)) || existsSync(join(portLockDir, `${port}.lock`))) {
      port++;
      assert.ok(port <= high, "no unclaimed free port to test with");
    }
    const lockFile = join(portLockDir, `${port}.lock`);
    mkdirSync(portLockDir, { recursive: true });
    try {
      // The test runner that started this file is alive: its claim holds, even on another address.
      writeFileSync(lockFile, String(process.ppid));
      assert.equal(await claimPort("0.0.0.0", port), false);
      assert.equal(readFileSync(lockFile, "utf8"), String(process.ppid));
      // A process that has exited: its claim is stale.
      const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
        encoding: "utf8",
      });
      writeFileSync(lockFile, dead.stdout);
      assert.equal(await claimPort("127.0.0.1", port), true);
      assert.equal(readFileSync(lockFile, "utf8"), String(process.pid));
      assert.equal(await claimPort("127.0.0.1", port), false, "not handed out twice by this process either");
    } finally {
      rmSync(lockFile, { force: true });
    }
  });
});
