// The process kubelet's credential files (e2e/provider/kubeadm/credentials.ts) and the Node it registers
// (node-agent.ts): the layout kubeadm's kubelet-finalize and kubelet-wait-bootstrap phases read, and the CSR the
// kube-controller-manager's csrapproving controller recognises as a node client request.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import assert from "node:assert/strict";
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { stringify } from "yaml";
import { createCA, issueCertificate, oneDay, validFor } from "../../../src/adapters/certs/pki.ts";
import {
  CURRENT_PAIR,
  csrName,
  embeddedClientPair,
  kubeconfigFromBootstrap,
  loadOrGenerateKey,
  loadValidKubeconfig,
  nodeCertificateRequest,
  storeClientPair,
} from "../../../e2e/provider/kubeadm/credentials.ts";
import { microTime, nodeObject, nodeStatus } from "../../../e2e/provider/kubeadm/node-agent.ts";

const dir = mkdtempSync(join(tmpdir(), "quorum-unit-kubelet-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const NODE = "ip-10-200-0-5";
const b64 = (text: string) => Buffer.from(text).toString("base64");

async function nodePair(validity = validFor(oneDay)) {
  const ca = await createCA("kubernetes", validFor(7 * oneDay));
  const pair = await issueCertificate(ca, {
    commonName: `system:node:${NODE}`,
    organization: "system:nodes",
    usages: "client",
    validity,
  });
  return { ca, ...pair };
}

function kubeconfigWith(user: Record<string, string>, caPem: string): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "kubernetes", cluster: { server: "https://10.200.0.5:6443", "certificate-authority-data": b64(caPem) } },
    ],
    users: [{ name: "u", user }],
    contexts: [{ name: "c", context: { cluster: "kubernetes", user: "u" } }],
    "current-context": "c",
  });
}

describe("the kubelet's client certificate files", () => {
  it("are stored as kubelet-client-<time>.pem (certificate, then key, 0600) behind the kubelet-client-current.pem link", async () => {
    const { certPem, keyPem } = await nodePair();
    const certDir = join(dir, "store");
    const current = storeClientPair(certDir, certPem, keyPem, new Date("2026-12-02T08:09:10.123Z"));
    assert.equal(current, join(certDir, CURRENT_PAIR));
    assert.ok(lstatSync(current).isSymbolicLink());
    assert.equal(readlinkSync(current), join(certDir, "kubelet-client-2026-12-02-08-09-10.pem"));
    assert.equal(statSync(current).mode & 0o777, 0o600);
    const text = readFileSync(current, "utf8");
    assert.ok(text.indexOf("BEGIN CERTIFICATE") < text.indexOf("PRIVATE KEY"), "certificate first, then key");
    const renewed = await nodePair();
    storeClientPair(certDir, renewed.certPem, renewed.keyPem, new Date("2026-12-02T09:00:00Z"));
    assert.equal(readlinkSync(current), join(certDir, "kubelet-client-2026-12-02-09-00-00.pem"));
  });

  it("kubelet.conf after a TLS bootstrap references the pair file and the bootstrap kubeconfig's server and CA", async () => {
    const { ca, certPem, keyPem } = await nodePair();
    const bootstrapPath = join(dir, "bootstrap-kubelet.conf");
    writeFileSync(bootstrapPath, kubeconfigWith({ token: "abcdef.0123456789abcdef" }, ca.certPem));
    const bootstrap = loadValidKubeconfig(bootstrapPath);
    assert.ok("kubeConfig" in bootstrap, JSON.stringify(bootstrap));
    const pem = storeClientPair(join(dir, "pki"), certPem, keyPem);
    const kubeconfigPath = join(dir, "kubelet.conf");
    writeFileSync(kubeconfigPath, kubeconfigFromBootstrap(bootstrap.kubeConfig, pem));
    const loaded = loadValidKubeconfig(kubeconfigPath);
    assert.ok("kubeConfig" in loaded, JSON.stringify(loaded));
    assert.equal(loaded.kubeConfig.getCurrentCluster()?.server, "https://10.200.0.5:6443");
    assert.equal(loaded.kubeConfig.getCurrentUser()?.certFile, pem);
    assert.equal(loaded.kubeConfig.getCurrentUser()?.keyFile, pem);
    assert.equal(embeddedClientPair(loaded.kubeConfig), undefined);
  });

  it("a kubeconfig with a missing pair file or an expired certificate does not count as credentials", async () => {
    const { ca } = await nodePair();
    const missing = join(dir, "missing.conf");
    writeFileSync(
      missing,
      kubeconfigWith({ "client-certificate": "/nonexistent.pem", "client-key": "/nonexistent.pem" }, ca.certPem),
    );
    assert.match((loadValidKubeconfig(missing) as { problem: string }).problem, /does not load|nonexistent/);
    const past = new Date(Date.now() - 3 * oneDay);
    const expired = await nodePair({ notBefore: past, notAfter: new Date(past.getTime() + oneDay) });
    const expiredPath = join(dir, "expired.conf");
    writeFileSync(
      expiredPath,
      kubeconfigWith(
        { "client-certificate-data": b64(expired.certPem), "client-key-data": b64(expired.keyPem) },
        expired.ca.certPem,
      ),
    );
    assert.match((loadValidKubeconfig(expiredPath) as { problem: string }).problem, /expired/);
    assert.match((loadValidKubeconfig(join(dir, "none.conf")) as { problem: string }).problem, /does not exist/);
  });

  it("kubeadm init's kubelet.conf yields its embedded pair", async () => {
    const { ca, certPem, keyPem } = await nodePair();
    const path = join(dir, "init-kubelet.conf");
    writeFileSync(
      path,
      kubeconfigWith({ "client-certificate-data": b64(certPem), "client-key-data": b64(keyPem) }, ca.certPem),
    );
    const loaded = loadValidKubeconfig(path);
    assert.ok("kubeConfig" in loaded);
    assert.deepEqual(embeddedClientPair(loaded.kubeConfig), { certPem, keyPem });
  });
});

describe("the node's certificate signing request", () => {
  it("asks for CN=system:node:<node>, O=system:nodes with a P-256 key, signed by that key", async () => {
    const keyPem = loadOrGenerateKey(join(dir, "csr"));
    assert.match(keyPem, /BEGIN EC PRIVATE KEY/);
    assert.equal(loadOrGenerateKey(join(dir, "csr")), keyPem, "a failed attempt's key is reused");
    const request = new x509.Pkcs10CertificateRequest(await nodeCertificateRequest(keyPem, NODE));
    assert.equal(request.subject, `O=system:nodes, CN=system:node:${NODE}`);
    assert.ok(await request.verify());
  });

  it("is named node-csr-<digest>, the same for the same key and node and different for another node", () => {
    const keyPem = loadOrGenerateKey(join(dir, "csr"));
    const name = csrName(keyPem, NODE);
    assert.match(name, /^node-csr-[A-Za-z0-9_-]{43}$/);
    assert.equal(csrName(keyPem, NODE), name);
    assert.notEqual(csrName(keyPem, "ip-10-200-0-6"), name);
  });
});

describe("the Node the kubelet registers", () => {
  const options = {
    nodeName: NODE,
    providerID: "process://ns/machine-abc",
    nodeIP: "10.200.0.5",
    kubeletVersion: "v1.37.2",
    log: () => undefined,
  };

  it("carries the providerID and only labels NodeRestriction lets a node set", () => {
    const node = nodeObject(options) as { metadata: { labels: Record<string, string> }; spec: { providerID: string } };
    assert.equal(node.spec.providerID, "process://ns/machine-abc");
    assert.equal(node.metadata.labels["kubernetes.io/hostname"], NODE);
    assert.equal(node.metadata.labels["kubernetes.io/os"], "linux");
    assert.ok(node.metadata.labels["kubernetes.io/arch"]);
    assert.ok(
      Object.keys(node.metadata.labels).every((key) => /^(beta\.)?kubernetes\.io\/(hostname|os|arch)$/.test(key)),
      "no node-role label: kubeadm's mark-control-plane adds that with admin credentials",
    );
  });

  it("reports Ready, no pressure, the InternalIP and the kubelet version", () => {
    const now = new Date("2026-12-02T08:00:10.500Z");
    const status = nodeStatus(options, now, new Date("2026-12-02T08:00:00Z")) as {
      conditions: { type: string; status: string; lastHeartbeatTime: string }[];
      addresses: unknown[];
      nodeInfo: { kubeletVersion: string };
    };
    assert.deepEqual(
      status.conditions.map((c) => [c.type, c.status]),
      [
        ["MemoryPressure", "False"],
        ["DiskPressure", "False"],
        ["PIDPressure", "False"],
        ["Ready", "True"],
      ],
    );
    assert.equal(status.conditions[3].lastHeartbeatTime, "2026-12-02T08:00:10Z");
    assert.deepEqual(status.addresses, [
      { type: "InternalIP", address: "10.200.0.5" },
      { type: "Hostname", address: NODE },
    ]);
    assert.equal(status.nodeInfo.kubeletVersion, "v1.37.2");
  });

  it("renews its Lease with a MicroTime of six fractional digits, as Go parses it", () => {
    assert.equal(microTime(new Date("2026-12-02T08:00:10.123Z")), "2026-12-02T08:00:10.123000Z");
  });
});
