// The `quorum` command end to end against a stand-in API server on loopback: arguments, the request it makes,
// and the error a user reads for each way the lookup can fail.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { runCli } from "../../../src/cli/run.ts";

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(argv: string[]): Promise<Result> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    now: () => new Date("2026-03-01T10:00:30Z"),
  });
  return { code, stdout, stderr };
}

/** A kubeconfig for a plain-HTTP stand-in server on 127.0.0.1:`port`, optionally with a context namespace. */
function writeKubeconfig(path: string, port: number, namespace?: string): void {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "test", cluster: { server: `http://127.0.0.1:${port}`, "insecure-skip-tls-verify": true } }],
      users: [{ name: "test", user: { token: "t" } }],
      contexts: [{ name: "test", context: { cluster: "test", user: "test", ...(namespace ? { namespace } : {}) } }],
      "current-context": "test",
    }),
  );
}

const qcp = {
  apiVersion: "controlplane.cluster.x-k8s.io/v1beta1",
  kind: "QuorumControlPlane",
  metadata: { name: "prod-cp", namespace: "team-a" },
  spec: { replicas: 1, version: "v1.33.2", machineTemplate: {} },
  status: {
    replicas: 1,
    etcd: {
      members: [
        {
          id: "8e9e",
          name: "prod-cp-x",
          machine: "prod-cp-x",
          node: "prod-cp-x",
          learner: false,
          healthy: true,
          leader: true,
          state: "leader",
        },
      ],
      quorum: { voters: 1, healthyVoters: 1, quorumSize: 1, failuresTolerated: 0 },
    },
    nextAction: { kind: "Wait", message: "nothing to do" },
  },
};

describe("quorum CLI", () => {
  let server: Server;
  let dir: string;
  let kubeconfig: string;
  const requests: string[] = [];
  let answer: (req: IncomingMessage, res: ServerResponse) => void = () => {};

  before(async () => {
    server = createServer((req, res) => {
      requests.push(req.url ?? "");
      answer(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    dir = mkdtempSync(join(tmpdir(), "quorum-cli-test-"));
    kubeconfig = join(dir, "kubeconfig");
    writeKubeconfig(kubeconfig, port, "team-a");
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const json = (code: number, body: unknown) => (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(code, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  };

  test("status prints the member table of the named QuorumControlPlane", async () => {
    answer = json(200, qcp);
    requests.length = 0;
    const result = await run(["status", "team-a/prod-cp", "--kubeconfig", kubeconfig]);
    assert.equal(result.stderr, "");
    assert.equal(result.code, 0);
    assert.deepEqual(requests, [
      "/apis/controlplane.cluster.x-k8s.io/v1beta1/namespaces/team-a/quorumcontrolplanes/prod-cp",
    ]);
    assert.match(result.stdout, /^prod-cp-x\s+prod-cp-x\s+prod-cp-x\s+8e9e\s+leader\s+healthy\s+leader$/m);
  });

  test("a bare name is looked up in the kubeconfig context's namespace", async () => {
    answer = json(200, qcp);
    requests.length = 0;
    const result = await run(["status", "prod-cp", "--kubeconfig", kubeconfig]);
    assert.equal(result.code, 0);
    assert.deepEqual(requests, [
      "/apis/controlplane.cluster.x-k8s.io/v1beta1/namespaces/team-a/quorumcontrolplanes/prod-cp",
    ]);
  });

  test("a QuorumControlPlane that does not exist is named, with the command that lists the existing ones", async () => {
    answer = json(404, {
      kind: "Status",
      status: "Failure",
      reason: "NotFound",
      code: 404,
      message: 'quorumcontrolplanes "nope" not found',
      details: { name: "nope", kind: "quorumcontrolplanes" },
    });
    const result = await run(["status", "team-a/nope", "--kubeconfig", kubeconfig]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /QuorumControlPlane team-a\/nope was not found on http:\/\/127\.0\.0\.1:\d+: list the existing ones with `kubectl get qcp -A`/,
    );
  });

  test("an API server without Quorum's CRDs is reported as such, with how to install them", async () => {
    answer = (_req, res) => {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("404 page not found\n");
    };
    const result = await run(["status", "team-a/prod-cp", "--kubeconfig", kubeconfig]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /does not serve quorumcontrolplanes\.controlplane\.cluster\.x-k8s\.io\/v1beta1 .*clusterctl init --control-plane quorum/,
    );
  });

  test("a refused request names the object and the permission needed", async () => {
    answer = json(403, {
      kind: "Status",
      status: "Failure",
      reason: "Forbidden",
      code: 403,
      message: "user t cannot get quorumcontrolplanes",
    });
    const result = await run(["status", "team-a/prod-cp", "--kubeconfig", kubeconfig]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /reading QuorumControlPlane team-a\/prod-cp .* was refused \(HTTP 403\): user t cannot get quorumcontrolplanes; use credentials that may get/,
    );
  });

  test("an API server that does not answer is reported with its address and the kubeconfig hint", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const file = join(dir, "dead-kubeconfig");
    writeKubeconfig(file, port);
    const result = await run(["status", "team-a/prod-cp", "--kubeconfig", file]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      new RegExp(
        `cannot reach the API server http://127\\.0\\.0\\.1:${port} to read QuorumControlPlane team-a/prod-cp: .*ECONNREFUSED.*; check --kubeconfig`,
      ),
    );
  });

  test("a missing kubeconfig file is named", async () => {
    const result = await run(["status", "team-a/prod-cp", "--kubeconfig", join(dir, "absent")]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /cannot load kubeconfig .*absent/);
  });

  for (const [argv, problem] of [
    [[], /no command given/],
    [["stats", "a/b"], /unknown command "stats"/],
    [["status"], /status needs <namespace>\/<name>/],
    [["status", "a/b/c"], /"a\/b\/c" is not <namespace>\/<name>/],
    [["status", "a/b", "extra"], /unexpected argument "extra"/],
    [["status", "a/b", "--kubecfg", "x"], /Unknown option '--kubecfg'/],
  ] as const) {
    test(`\`quorum ${argv.join(" ")}\` is a usage error that prints the usage`, async () => {
      const result = await run([...argv]);
      assert.equal(result.code, 2);
      assert.match(result.stderr, problem);
      assert.match(result.stderr, /Usage: quorum status <namespace>\/<name>/);
    });
  }

  test("--help prints the usage and succeeds", async () => {
    const result = await run(["--help"]);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^Usage: quorum status/);
  });
});
