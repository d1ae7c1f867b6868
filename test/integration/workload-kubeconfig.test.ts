// A `<cluster>-kubeconfig` Secret is data, never code (issue 14): whoever can write one Secret in a tenant namespace
// must not run commands in the controller, which can read every Secret of the management cluster. Real kube-apiserver,
// real etcd members, the controller as its own process (logging at debug level).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { parse, stringify } from "yaml";
import { CAPI_API_VERSION } from "../../src/api/constants.ts";
import { kubeRequestOk } from "../env/kube.ts";
import { freePort } from "../env/net.ts";
import { makeTempDir } from "../env/processes.ts";
import { startStack, type ControllerProcess, type ControllerStack, type QuorumMonitor } from "./controller/stack.ts";

const NS = "tenant-a";
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

/** A kubeconfig as a tenant would write it: its user runs `user` instead of presenting a certificate. */
function tenantKubeconfig(cluster: string, port: number, user: Record<string, unknown>): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: cluster, cluster: { server: `https://127.0.0.1:${port}` } }],
    contexts: [{ name: `${cluster}-admin@${cluster}`, context: { cluster, user: `${cluster}-admin` } }],
    "current-context": `${cluster}-admin@${cluster}`,
    users: [{ name: `${cluster}-admin`, user }],
  });
}

/** MachinesReady once its message matches `pattern`. */
async function machinesReady(
  stack: ControllerStack,
  name: string,
  pattern: RegExp,
  timeoutMs = 90_000,
): Promise<{ status: string; reason: string; message: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const qcp = await stack.getControlPlane(NS, name);
    const condition = qcp.status?.conditions?.find((candidate) => candidate.type === "MachinesReady");
    const message = condition?.message ?? "";
    if (pattern.test(message)) return { status: condition?.status ?? "", reason: condition?.reason ?? "", message };
    if (Date.now() > deadline)
      throw new Error(
        `QuorumControlPlane ${NS}/${name}: MachinesReady never matched ${pattern}; status: ${JSON.stringify(qcp.status)}`,
      );
    await sleep(300);
  }
}

describe("a workload kubeconfig Secret that asks to run a command", { timeout: 600_000 }, () => {
  let stack: ControllerStack;
  let controller: ControllerProcess;
  let execUserMonitor: QuorumMonitor;
  const markers = makeTempDir("kubeconfig-markers");
  const marker = (name: string) => join(markers, name);

  before(async () => {
    stack = await startStack();
    const unusedPort = await freePort();
    // The two tenant clusters have no control-plane endpoint yet, so Quorum cannot reach their API with its own client
    // certificate (it would, and never read the Secret, once the endpoint is set): it falls back to the Secret.
    execUserMonitor = stack.monitor(await stack.createCluster(NS, "exec-user", { replicas: 1, version: "v1.31.0" }));
    await stack.createCluster(NS, "auth-provider", { replicas: 1, version: "v1.31.0" });
    await stack.createCluster(NS, "owned", { replicas: 1, version: "v1.31.0" });
    // Quorum writes (and owns) this one's kubeconfig once the endpoint is known; nothing listens there.
    await kubeRequestOk(stack.kubeConfig, `/apis/${CAPI_API_VERSION}/namespaces/${NS}/clusters/owned`, {
      method: "PATCH",
      body: { spec: { controlPlaneEndpoint: { host: "127.0.0.1", port: unusedPort } } },
    });
    const tenantSecrets: Record<string, Record<string, unknown>> = {
      "exec-user": {
        exec: {
          apiVersion: "client.authentication.k8s.io/v1",
          command: "/bin/sh",
          args: ["-c", `touch ${marker("exec-user")}`],
          interactiveMode: "Never",
        },
      },
      "auth-provider": {
        "auth-provider": {
          name: "gcp",
          config: {
            "cmd-path": "/bin/sh",
            "cmd-args": `-c 'touch ${marker("auth-provider")}'`,
            "token-key": "{.token}",
            "expiry-key": "{.expiry}",
          },
        },
      },
    };
    for (const [cluster, user] of Object.entries(tenantSecrets)) {
      await kubeRequestOk(stack.kubeConfig, `/api/v1/namespaces/${NS}/secrets`, {
        body: {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: `${cluster}-kubeconfig`, namespace: NS },
          data: { value: b64(tenantKubeconfig(cluster, unusedPort, user)) },
        },
      });
    }
    controller = await stack.startController();
  });

  after(async () => {
    await stack?.stop();
  });

  it("never runs a user's exec command, names the Secret and the field, and keeps reconciling etcd", async () => {
    await stack.waitConverged(NS, "exec-user", 1);
    const { status, reason, message } = await machinesReady(
      stack,
      "exec-user",
      /Secret tenant-a\/exec-user-kubeconfig/,
    );
    assert.equal(status, "False");
    assert.equal(reason, "WorkloadKubeconfigRejected");
    assert.match(
      message,
      /Secret tenant-a\/exec-user-kubeconfig: data key "value": field users\[0\] "exec-user-admin"\.user\.exec is refused \(Quorum never runs a command/,
    );
    assert.match(message, /remove it; Quorum reads only the current context's server/);
    assert.equal(existsSync(marker("exec-user")), false, "the exec command ran");

    // Still reconciling etcd safely with the Secret refused: a scale-up adds two members without losing quorum.
    await stack.patchSpec(NS, "exec-user", { replicas: 3 });
    const scaled = await stack.waitConverged(NS, "exec-user", 3);
    assert.equal(scaled.status?.etcd?.quorum?.voters, 3);
    assert.deepEqual(execUserMonitor.losses, [], "etcd lost quorum during the scale-up");
    assert.ok(execUserMonitor.samples.length > 0, "the quorum monitor sampled etcd");
    assert.equal((await machinesReady(stack, "exec-user", /exec is refused/)).reason, "WorkloadKubeconfigRejected");
    assert.equal(existsSync(marker("exec-user")), false, "the exec command ran");
  });

  it("never runs an auth-provider's cmd-path, and names the Secret and the field", async () => {
    await stack.waitConverged(NS, "auth-provider", 1);
    const { reason, message } = await machinesReady(
      stack,
      "auth-provider",
      /Secret tenant-a\/auth-provider-kubeconfig/,
    );
    assert.equal(reason, "WorkloadKubeconfigRejected");
    assert.match(message, /field users\[0\] "auth-provider-admin"\.user\.auth-provider is refused \(.*cmd-path/);
    assert.equal(existsSync(marker("auth-provider")), false, "the auth-provider command ran");
  });

  it("rewrites its own kubeconfig Secret when someone adds an exec stanza to it, without running it", async () => {
    await stack.waitConverged(NS, "owned", 1);
    const path = `/api/v1/namespaces/${NS}/secrets/owned-kubeconfig`;
    const secret = await kubeRequestOk<{
      metadata: { ownerReferences?: { kind: string }[] };
      data: Record<string, string>;
    }>(stack.kubeConfig, path);
    assert.equal(secret.metadata.ownerReferences?.[0]?.kind, "QuorumControlPlane");
    const config = parse(Buffer.from(secret.data.value, "base64").toString("utf8")) as {
      users: { user: Record<string, unknown> }[];
    };
    config.users[0].user.exec = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: "/bin/sh",
      args: ["-c", `touch ${marker("owned")}`],
    };
    await kubeRequestOk(stack.kubeConfig, path, { method: "PATCH", body: { data: { value: b64(stringify(config)) } } });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const current = await kubeRequestOk<{ data: Record<string, string> }>(stack.kubeConfig, path);
      const text = Buffer.from(current.data.value, "base64").toString("utf8");
      if (!text.includes("exec")) break;
      if (Date.now() > deadline) throw new Error(`Secret ${NS}/owned-kubeconfig still has the exec stanza:\n${text}`);
      await sleep(300);
    }
    // A few more reconciles (etcd is polled every second here) still run nothing.
    await sleep(3_000);
    for (const name of ["exec-user", "auth-provider", "owned"])
      assert.equal(existsSync(marker(name)), false, `the ${name} command ran`);
  });

  it("puts no key material in its debug-level log or its Events, though it generated CAs, keys and a kubeconfig", async () => {
    const logs = readFileSync(controller.process.logFile, "utf8");
    assert.match(logs, / DEBUG /, "the controller logged at debug level");
    assert.equal(logs.includes("-----BEGIN"), false, "a PEM block appears in the controller's debug log");
    const events = await kubeRequestOk<{ items: { reason?: string; message?: string }[] }>(
      stack.kubeConfig,
      `/api/v1/namespaces/${NS}/events`,
    );
    assert.ok(events.items.length > 0, "the controller recorded Events");
    assert.deepEqual(
      events.items.filter((event) => (event.message ?? "").includes("-----BEGIN")).map((event) => event.reason),
      [],
      "Events carrying a PEM block",
    );
  });
});
