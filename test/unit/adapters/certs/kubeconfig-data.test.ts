// The workload kubeconfig parser: data, never code. Each refused field is one a real kubeconfig can carry
// (EKS/GKE exec plugins, the old gcp/oidc auth-provider with cmd-path, kubectl's file references, a proxy).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse as parseYaml, stringify } from "yaml";
import { kubeconfigFromSecret } from "../../../../src/adapters/certs/kubeconfig.ts";
import { parseKubeconfig, RefusedKubeconfigFieldError } from "../../../../src/adapters/certs/kubeconfig-data.ts";
import { KubeconfigRefusedError, SecretGarbageError } from "../../../../src/adapters/errors.ts";
import { kubeConfigOf } from "../../../../src/adapters/workload/client.ts";
import { MemorySecretStore } from "../memory-secret-store.ts";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const CA = "-----BEGIN CERTIFICATE-----\nMIIca\n-----END CERTIFICATE-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nMIIcert\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN EC PRIVATE KEY-----\nMHckey\n-----END EC PRIVATE KEY-----\n";

/** A kubeconfig as clusterctl writes it, with `cluster` and `user` merged into the current context's entries. */
function kubeconfig(cluster: Record<string, unknown> = {}, user: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: "other", cluster: { server: "https://10.9.9.9:6443" } },
      {
        name: "prod",
        cluster: { server: "https://10.0.0.10:6443", "certificate-authority-data": b64(CA), ...cluster },
      },
    ],
    contexts: [{ name: "prod-admin@prod", context: { cluster: "prod", user: "prod-admin" } }],
    "current-context": "prod-admin@prod",
    users: [
      { name: "prod-admin", user: { "client-certificate-data": b64(CERT), "client-key-data": b64(KEY), ...user } },
    ],
  });
}

describe("parsing a workload kubeconfig", () => {
  it("takes the current context's server, CA and client certificate and key", () => {
    assert.deepEqual(parseKubeconfig(kubeconfig()), {
      cluster: "prod",
      server: "https://10.0.0.10:6443",
      caPem: CA,
      certPem: CERT,
      keyPem: KEY,
    });
  });

  it("accepts a bearer token instead of a client certificate, and insecure-skip-tls-verify set to false", () => {
    const text = kubeconfig(
      { "insecure-skip-tls-verify": false },
      { "client-certificate-data": null, "client-key-data": null, token: "abc.def" },
    );
    assert.deepEqual(parseKubeconfig(text), {
      cluster: "prod",
      server: "https://10.0.0.10:6443",
      caPem: CA,
      certPem: "",
      keyPem: "",
      token: "abc.def",
    });
  });

  const refused: {
    field: string;
    cluster?: Record<string, unknown>;
    user?: Record<string, unknown>;
    path: string;
    why: RegExp;
  }[] = [
    {
      field: "users[].exec",
      user: {
        exec: { apiVersion: "client.authentication.k8s.io/v1", command: "/bin/sh", args: ["-c", "touch MARKER"] },
      },
      path: 'users[0] "prod-admin".user.exec',
      why: /never runs a command/,
    },
    {
      field: "users[].auth-provider",
      user: { "auth-provider": { name: "gcp", config: { "cmd-path": "/bin/sh", "cmd-args": "-c id" } } },
      path: 'users[0] "prod-admin".user.auth-provider',
      why: /cmd-path/,
    },
    {
      field: "users[].tokenFile",
      user: { tokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token" },
      path: 'users[0] "prod-admin".user.tokenFile',
      why: /never reads a file/,
    },
    {
      field: "users[].client-certificate",
      user: { "client-certificate": "/etc/kubernetes/pki/admin.crt" },
      path: 'users[0] "prod-admin".user.client-certificate',
      why: /never reads a file/,
    },
    {
      field: "users[].client-key",
      user: { "client-key": "/etc/kubernetes/pki/admin.key" },
      path: 'users[0] "prod-admin".user.client-key',
      why: /never reads a file/,
    },
    {
      field: "clusters[].certificate-authority",
      cluster: { "certificate-authority": "/etc/kubernetes/pki/ca.crt" },
      path: 'clusters[1] "prod".cluster.certificate-authority',
      why: /never reads a file/,
    },
    {
      field: "clusters[].insecure-skip-tls-verify",
      cluster: { "insecure-skip-tls-verify": true },
      path: 'clusters[1] "prod".cluster.insecure-skip-tls-verify',
      why: /always verifies/,
    },
    {
      field: "clusters[].proxy-url",
      cluster: { "proxy-url": "http://10.0.0.99:3128" },
      path: 'clusters[1] "prod".cluster.proxy-url',
      why: /never through a proxy/,
    },
    {
      field: "a plain-HTTP server",
      cluster: { server: "http://10.0.0.10:8080" },
      path: 'clusters[1] "prod".cluster.server',
      why: /only over TLS/,
    },
  ];
  for (const entry of refused) {
    it(`refuses ${entry.field}, naming the field`, () => {
      assert.throws(
        () => parseKubeconfig(kubeconfig(entry.cluster, entry.user)),
        (error: unknown) => {
          assert.ok(error instanceof RefusedKubeconfigFieldError);
          assert.equal(error.field, entry.path);
          assert.match(error.message, entry.why);
          return true;
        },
      );
    });
  }

  const garbage: { name: string; text: string; message: RegExp }[] = [
    { name: "YAML that does not parse", text: "clusters: [unclosed", message: /^is not YAML \(/ },
    { name: "a YAML scalar", text: "just a string", message: /^is not a kubeconfig \(no YAML mapping\)/ },
    { name: "no current-context", text: "clusters: []", message: /has no context named by current-context null/ },
    {
      name: "a user without credentials",
      text: kubeconfig({}, { "client-certificate-data": null, "client-key-data": null }),
      message: /has no credentials/,
    },
    {
      name: "a certificate without its key",
      text: kubeconfig({}, { "client-key-data": null }),
      message: /only one of client-certificate-data and client-key-data/,
    },
    {
      name: "CA data that is not base64",
      text: kubeconfig({ "certificate-authority-data": "not base64!" }),
      message: /certificate-authority-data is not base64/,
    },
  ];
  for (const entry of garbage) {
    it(`refuses ${entry.name} with a message saying what is wrong`, () => {
      assert.throws(
        () => parseKubeconfig(entry.text),
        (error: unknown) => {
          assert.ok(error instanceof Error && !(error instanceof RefusedKubeconfigFieldError));
          assert.match(error.message, entry.message);
          return true;
        },
      );
    });
  }

  it("ignores refused fields of users and clusters the current context does not name", () => {
    const text = stringify({
      ...(parseYaml(kubeconfig()) as object),
      users: [
        { name: "attacker", user: { exec: { command: "/bin/sh" } } },
        { name: "prod-admin", user: { "client-certificate-data": b64(CERT), "client-key-data": b64(KEY) } },
      ],
    });
    assert.equal(parseKubeconfig(text).certPem, CERT);
  });
});

describe("a kubeconfig Secret with a refused field", () => {
  it("is a KubeconfigRefusedError naming the Secret, the field and the fix", () => {
    const store = new MemorySecretStore();
    const secret = store.seed("team-a", "prod-kubeconfig", {
      value: kubeconfig({}, { exec: { command: "/bin/sh", args: ["-c", "touch MARKER"] } }),
    });
    assert.throws(
      () => kubeconfigFromSecret({ namespace: "team-a", name: "prod-kubeconfig" }, secret),
      (error: unknown) => {
        assert.ok(error instanceof KubeconfigRefusedError);
        assert.equal(error.reason, "WorkloadKubeconfigRejected");
        assert.match(
          error.message,
          /^Secret team-a\/prod-kubeconfig: data key "value": field users\[0\] "prod-admin"\.user\.exec is refused \(.*\): remove it; .*client-certificate-data/,
        );
        return true;
      },
    );
  });

  it("is still a SecretGarbageError when it is not a kubeconfig at all", () => {
    const store = new MemorySecretStore();
    const secret = store.seed("team-a", "prod-kubeconfig", { value: "clusters: [unclosed" });
    assert.throws(
      () => kubeconfigFromSecret({ namespace: "team-a", name: "prod-kubeconfig" }, secret),
      SecretGarbageError,
    );
  });
});

describe("the workload client's KubeConfig", () => {
  it("carries only the parsed server, CA and credentials, and verifies TLS", () => {
    const config = kubeConfigOf(parseKubeconfig(kubeconfig()));
    assert.deepEqual(config.getCurrentCluster(), {
      name: "workload",
      server: "https://10.0.0.10:6443",
      caData: b64(CA),
      skipTLSVerify: false,
    });
    const user = config.getCurrentUser();
    assert.equal(user?.certData, b64(CERT));
    assert.equal(user?.keyData, b64(KEY));
    assert.equal(user?.exec, undefined);
    assert.equal(user?.authProvider, undefined);
  });
});
