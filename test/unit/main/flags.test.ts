import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseBindAddress, parseFlags } from "../../../src/flags.ts";

describe("controller flags", () => {
  it("defaults to no leader election, 10 workers, a 10 s etcd poll and JSON logs", () => {
    const flags = parseFlags([], {});
    assert.equal(flags.leaderElect, false);
    assert.equal(flags.concurrency, 10);
    assert.equal(flags.etcdPollIntervalMs, 10_000);
    assert.equal(flags.logFormat, "json");
    assert.equal(flags.kubeconfig, undefined);
  });

  it("polls a settled cluster's etcd every 90 s by default, never more often than --etcd-poll-interval", () => {
    assert.equal(parseFlags([], {}).etcdIdlePollIntervalMs, 90_000);
    assert.equal(parseFlags(["--etcd-idle-poll-interval", "5m"], {}).etcdIdlePollIntervalMs, 300_000);
    // A user who slows the short poll down to 90 s does not get settled clusters polled faster than that.
    assert.equal(parseFlags(["--etcd-poll-interval", "90s"], {}).etcdIdlePollIntervalMs, 90_000);
    // Equal intervals turn the adaptive polling off.
    assert.equal(
      parseFlags(["--etcd-poll-interval", "1s", "--etcd-idle-poll-interval", "1s"], {}).etcdIdlePollIntervalMs,
      1_000,
    );
    assert.throws(
      () => parseFlags(["--etcd-idle-poll-interval", "2h"], {}),
      /--etcd-idle-poll-interval must be between 500ms and 1h \(got "2h"\)/,
    );
  });

  it("takes the kubeconfig from $KUBECONFIG when the flag is absent, and the flag wins over it", () => {
    assert.equal(parseFlags([], { KUBECONFIG: "/env" }).kubeconfig, "/env");
    assert.equal(parseFlags(["--kubeconfig", "/flag"], { KUBECONFIG: "/env" }).kubeconfig, "/flag");
  });

  it("rejects a bad value with the flag's name and an example of a good one", () => {
    assert.throws(
      () => parseFlags(["--etcd-poll-interval", "often"], {}),
      /--etcd-poll-interval must be a positive duration such as 500ms, 10s or 1m \(got "often"\)/,
    );
    assert.throws(() => parseFlags(["--concurrency", "0"], {}), /--concurrency must be a whole number >= 1/);
    assert.throws(() => parseFlags(["--log-format", "xml"], {}), /--log-format must be json or text/);
  });

  it("refuses duration flags outside their bounds, naming the flag and the limit, so 1,000 days cannot overflow a timer into a hot loop", () => {
    // setTimeout fires after 1 ms for anything above 2^31-1 ms (~24.8 days).
    assert.throws(
      () => parseFlags(["--etcd-poll-interval=24000h"], {}),
      /^Error: --etcd-poll-interval must be between 500ms and 1h \(got "24000h"\): /,
    );
    assert.throws(
      () => parseFlags(["--etcd-poll-interval", "1h0m1s"], {}),
      /--etcd-poll-interval must be between 500ms and 1h/,
    );
    assert.throws(
      () => parseFlags(["--etcd-poll-interval", "100ms"], {}),
      /--etcd-poll-interval must be between 500ms and 1h \(got "100ms"\)/,
    );
    assert.throws(
      () => parseFlags(["--etcd-call-timeout", "10m"], {}),
      /--etcd-call-timeout must be between 100ms and 1m \(got "10m"\)/,
    );
    assert.throws(
      () => parseFlags(["--etcd-call-timeout", "50ms"], {}),
      /--etcd-call-timeout must be between 100ms and 1m/,
    );
    const atTheLimits = parseFlags(["--etcd-poll-interval", "1h", "--etcd-call-timeout", "100ms"], {});
    assert.equal(atTheLimits.etcdPollIntervalMs, 3_600_000);
    assert.equal(atTheLimits.etcdCallTimeoutMs, 100);
    assert.equal(
      parseFlags(["--etcd-poll-interval", "500ms", "--etcd-call-timeout", "1m"], {}).etcdPollIntervalMs,
      500,
    );
  });

  it("gives every management API request a 30 s deadline and a leader 2 minutes to sync its caches by default, within bounds", () => {
    const defaults = parseFlags([], {});
    assert.equal(defaults.apiRequestTimeoutMs, 30_000);
    assert.equal(defaults.cacheSyncTimeoutMs, 120_000);
    assert.equal(parseFlags(["--api-request-timeout", "5s"], {}).apiRequestTimeoutMs, 5_000);
    assert.throws(
      () => parseFlags(["--api-request-timeout", "24000h"], {}),
      /--api-request-timeout must be between 1s and 5m \(got "24000h"\)/,
    );
    assert.throws(
      () => parseFlags(["--cache-sync-timeout", "1s"], {}),
      /--cache-sync-timeout must be between 10s and 30m \(got "1s"\)/,
    );
  });

  it("serves /metrics on :8443 over HTTPS with authentication by default, and plain HTTP only when asked", () => {
    const defaults = parseFlags([], {});
    assert.deepEqual(parseBindAddress("--metrics-bind-address", defaults.metricsBindAddress), {
      host: "0.0.0.0",
      port: 8443,
    });
    assert.equal(defaults.metricsSecure, true);
    assert.equal(defaults.metricsCertDir, undefined);
    assert.equal(parseFlags(["--metrics-secure=false"], {}).metricsSecure, false);
    assert.equal(
      parseFlags(["--metrics-cert-dir", "/tmp/k8s-metrics-server/serving-certs"], {}).metricsCertDir,
      "/tmp/k8s-metrics-server/serving-certs",
    );
    assert.throws(() => parseFlags(["--metrics-secure=no"], {}), /--metrics-secure must be true or false \(got "no"\)/);
  });

  it("rejects an unknown flag", () => {
    assert.throws(() => parseFlags(["--replicas", "3"], {}), /Unknown option '--replicas'/);
  });

  it("reads bind addresses and treats 0 as disabled", () => {
    assert.deepEqual(parseBindAddress("--metrics-bind-address", "127.0.0.1:8080"), { host: "127.0.0.1", port: 8080 });
    assert.deepEqual(parseBindAddress("--metrics-bind-address", ":9090"), { host: "0.0.0.0", port: 9090 });
    assert.equal(parseBindAddress("--metrics-bind-address", "0"), undefined);
    assert.throws(() => parseBindAddress("--metrics-bind-address", "localhost:http"), /must be HOST:PORT/);
  });
});
