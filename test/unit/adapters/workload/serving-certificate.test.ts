// Reading a Machine's API server serving certificate expiry over TLS, against a real TLS server on 127.0.0.1 whose
// certificate (from src/adapters/certs/pki.ts) expires in a known number of days.
import assert from "node:assert/strict";
import { createServer as createNetServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { createServer, type Server } from "node:tls";
import { oneDay } from "../../../../src/adapters/certs/pki.ts";
import {
  apiServerPortOf,
  readServingCertificateExpiry,
  ServingCertificateExpiries,
} from "../../../../src/adapters/workload/serving-certificate.ts";

import { apiServerCertificate, close, listen } from "./local-api-server.ts";

describe("the API server serving certificate expiry", () => {
  let server: Server;
  let port: number;
  let notAfter: Date;

  before(async () => {
    const issued = await apiServerCertificate(5 * oneDay);
    notAfter = issued.notAfter;
    // An untrusted CA on purpose: only the date is read, nothing is verified.
    server = createServer({ cert: issued.certPem, key: issued.keyPem }, (socket) => socket.end());
    port = await listen(server);
  });

  after(() => close(server));

  it("is the notAfter of the certificate the server sends, 5 days from now, whatever CA signed it", async () => {
    const expiry = await readServingCertificateExpiry("127.0.0.1", port);
    assert.equal(expiry.toISOString(), notAfter.toISOString());
    const days = (expiry.getTime() - Date.now()) / oneDay;
    assert.ok(days > 4.99 && days <= 5, `expires in ${days} days`);
  });

  it("is read once per Machine name and UID, and again for a Machine recreated under the same name", async () => {
    let now = Date.now();
    // Counted where the read is made: with TLS 1.3 the server sees a handshake complete a turn of the event loop
    // after the client does, so a server-side count lags behind a read that has already returned.
    let reads = 0;
    const expiries = new ServingCertificateExpiries(
      () => now,
      (host, machinePort) => {
        reads++;
        return readServingCertificateExpiry(host, machinePort);
      },
    );
    const machine = { name: "cp-1", uid: "uid-1", address: "127.0.0.1" };
    const first = await expiries.expiries("ns/cluster", [machine], port);
    assert.deepEqual(first, { expiries: { "cp-1": notAfter.getTime() }, errors: [] });
    now += 60 * 60_000;
    await expiries.expiries("ns/cluster", [machine], port);
    assert.equal(reads, 1, "an hour later the cached expiry is used");
    await expiries.expiries("ns/cluster", [{ ...machine, uid: "uid-2" }], port);
    assert.equal(reads, 2, "a new UID is a new Machine");
  });

  it("names the Machine and the address when nothing answers the handshake within the deadline, once a minute", async () => {
    // A TCP listener that never speaks TLS, like a Machine whose API server hangs.
    const silent = createNetServer(() => undefined);
    const silentPort = await listen(silent);
    try {
      const started = Date.now();
      await assert.rejects(
        readServingCertificateExpiry("127.0.0.1", silentPort, 300),
        /127\.0\.0\.1:\d+.*no TLS handshake within 300 ms/,
      );
      assert.ok(Date.now() - started < 2_000);
      const expiries = new ServingCertificateExpiries(
        () => Date.now(),
        (host, p) => readServingCertificateExpiry(host, p, 300),
      );
      const result = await expiries.expiries(
        "ns/cluster",
        [{ name: "cp-2", uid: "u", address: "127.0.0.1" }],
        silentPort,
      );
      assert.deepEqual(result.expiries, {});
      assert.match(
        result.errors[0] ?? "",
        /^Machine cp-2: could not read the API server serving certificate at 127\.0\.0\.1/,
      );
      const again = await expiries.expiries(
        "ns/cluster",
        [{ name: "cp-2", uid: "u", address: "127.0.0.1" }],
        silentPort,
      );
      assert.deepEqual(again, { expiries: {}, errors: [] }, "within a minute: not dialled again, not reported again");
    } finally {
      silent.close();
    }
  });

  it("keeps an expiry only for the Machines still to be read, so a cluster's rollouts do not grow the cache", async () => {
    const dialled: string[] = [];
    const expiries = new ServingCertificateExpiries(
      () => 0,
      async (host) => {
        dialled.push(host);
        return new Date("2027-01-01T00:00:00Z");
      },
    );
    const machineOf = (name: string) => ({ name, uid: `uid-${name}`, address: `10.0.0.${name.length}` });
    let current = ["a", "bb", "ccc"].map(machineOf);
    await expiries.expiries("ns/c1", current, 6443);
    await expiries.expiries("ns/c2", [machineOf("a")], 6443);
    for (const replacement of ["dddd", "eeeee", "ffffff"]) {
      current = [...current.slice(1), machineOf(replacement)];
      await expiries.expiries("ns/c1", current, 6443);
    }
    assert.equal(expiries.size, 4, "three Machines of c1 and one of c2");
    await expiries.expiries("ns/c1", [], 6443);
    assert.equal(expiries.size, 1, "c2's entry stays when c1's Machines are all recorded");
    assert.equal(dialled.length, 7, "each Machine was dialled once");
  });

  it("is dialled at kubeadm's bindPort from the template's init or join configuration, else 6443", () => {
    const template = (spec: object) => ({ spec: { template: { spec } } });
    assert.equal(apiServerPortOf(template({})), 6443);
    assert.equal(apiServerPortOf(template({ initConfiguration: { localAPIEndpoint: { bindPort: 7443 } } })), 7443);
    assert.equal(
      apiServerPortOf(template({ joinConfiguration: { controlPlane: { localAPIEndpoint: { bindPort: 8443 } } } })),
      8443,
    );
  });
});
