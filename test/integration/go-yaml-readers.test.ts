// What Quorum writes as YAML for Go programs, read back by the real ones: kube-system/kubeadm-config's
// ClusterConfiguration by kubeadm (what `kubeadm join --control-plane` decodes) and the <cluster>-kubeconfig Secret's
// kubeconfig by client-go (what CAPI's cluster cache and `clusterctl get kubeconfig` load). Both decode with
// sigs.k8s.io/yaml (YAML 1.1): a plain `off`, `y` or `yes` is a boolean there, `2001-12-14` a timestamp. Values users
// do write: GOGC=off for the API server, a Cluster named `yes`.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { parseAllDocuments, stringify } from "yaml";
import { buildKubeconfig } from "../../src/adapters/certs/kubeconfig.ts";
import { createCA, issueCertificate, oneDay, validFor } from "../../src/adapters/certs/pki.ts";
import { parseAsGo } from "../../src/adapters/go-yaml.ts";
import { syncClusterConfiguration } from "../../src/adapters/workload/kubeadm/cluster-configuration.ts";
import { uploadedClusterConfiguration } from "../env/kubeadm-uploaded.ts";
import { freePort } from "../env/net.ts";
import { builtBinary } from "../env/tools.ts";

const kubeadm = builtBinary("kubeadm");
const dir = mkdtempSync(join(tmpdir(), "quorum-go-yaml-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(kubeadm, args, { encoding: "utf8", timeout: 30_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** kubeadm's reading of a ClusterConfiguration, re-emitted by `kubeadm config migrate`; or why it refused it. */
function asKubeadmReadsIt(text: string): { apiServer?: Record<string, unknown> } | string {
  const input = join(dir, "cluster-configuration.yaml");
  const output = join(dir, "migrated.yaml");
  writeFileSync(input, text);
  rmSync(output, { force: true });
  const { status, output: said } = run(["config", "migrate", "--old-config", input, "--new-config", output]);
  if (status !== 0) return said;
  const documents = parseAllDocuments(readFileSync(output, "utf8")).map((document) => document.toJS() as unknown);
  const found = documents.find(
    (document): document is { kind: string; apiServer?: Record<string, unknown> } =>
      typeof document === "object" &&
      document !== null &&
      (document as { kind?: unknown }).kind === "ClusterConfiguration",
  );
  assert.ok(found, `kubeadm config migrate wrote no ClusterConfiguration:\n${readFileSync(output, "utf8")}`);
  return found;
}

describe("YAML Quorum writes, read by the Go programs that use it", () => {
  it("kubeadm reads the kubeadm-config Quorum rewrites with the template's strings as strings", () => {
    const apiServer = {
      certSANs: ["localhost", "y"],
      extraArgs: [{ name: "audit-log-path", value: "2001-12-14" }],
      extraEnvs: [{ name: "GOGC", value: "off" }],
    };
    const uploaded = uploadedClusterConfiguration({
      clusterName: "demo",
      kubernetesVersion: "v1.36.3",
      controlPlaneEndpoint: "10.200.1.254:6443",
    });
    const { yaml } = syncClusterConfiguration(uploaded, { apiServer }, "v1.37.2");
    assert.ok(yaml, "an upgrade rewrites the document");
    const read = asKubeadmReadsIt(yaml);
    assert.notEqual(typeof read, "string", `kubeadm refused what Quorum wrote: ${String(read)}\n${yaml}`);
    assert.deepEqual((read as { apiServer?: unknown }).apiServer, apiServer);
    // The same document written as YAML 1.2 (the yaml package's default, what Quorum wrote before) is refused.
    const plain = asKubeadmReadsIt(stringify(parseAsGo(yaml)));
    assert.match(String(plain), /cannot unmarshal bool into Go struct field/);
  });

  it("client-go loads the kubeconfig Quorum writes for a Cluster named yes", async () => {
    const ca = await createCA("yes-ca", validFor(oneDay));
    const client = await issueCertificate(ca, {
      commonName: "kubernetes-admin",
      organization: "system:masters",
      usages: "client",
      validity: validFor(oneDay),
    });
    // Nothing listens there: a kubeconfig that loads gets as far as a refused connection.
    const server = `https://127.0.0.1:${await freePort()}`;
    const kubeconfig = join(dir, "kubeconfig");
    const tokenList = (text: string) => {
      writeFileSync(kubeconfig, text);
      return run(["token", "list", "--kubeconfig", kubeconfig]).output;
    };
    const contents = { cluster: "yes", server, caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem };
    const written = buildKubeconfig(contents);
    const said = tokenList(written);
    assert.doesNotMatch(said, /failed to load admin kubeconfig/, `client-go refused:\n${said}\n${written}`);
    assert.match(said, /connection refused/);
    // Written as YAML 1.2, the name `yes` is a boolean to client-go.
    assert.match(tokenList(stringify(parseAsGo(written))), /failed to load admin kubeconfig: .*cannot unmarshal bool/);
  });
});
