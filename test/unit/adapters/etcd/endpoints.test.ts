import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { endpointsFromAddresses, etcdEndpoints, normalizeEndpoint } from "../../../../src/adapters/etcd/endpoints.ts";

describe("etcd endpoints", () => {
  it("asks each Machine address on the configured client port, IPv6 in brackets", () => {
    assert.deepEqual(endpointsFromAddresses(["10.0.0.1", "fd00::5", "cp-0.example.com"], 12379), [
      "https://10.0.0.1:12379",
      "https://[fd00::5]:12379",
      "https://cp-0.example.com:12379",
    ]);
  });

  it("asks an endpoint once even when a Machine and the member list both name it", () => {
    const endpoints = etcdEndpoints([{ addresses: ["10.0.0.1", "10.0.0.1"] }, { addresses: ["10.0.0.2"] }], 2379, [
      { clientURLs: ["https://10.0.0.2:2379/"] },
      { clientURLs: ["https://10.0.0.3:2379"] },
      { clientURLs: [] },
    ]);
    assert.deepEqual(endpoints, ["https://10.0.0.1:2379", "https://10.0.0.2:2379", "https://10.0.0.3:2379"]);
  });

  it("ignores empty addresses", () => {
    assert.deepEqual(endpointsFromAddresses(["", "  "], 2379), []);
  });

  it("reads a bare host:port as https", () => {
    assert.equal(normalizeEndpoint("127.0.1.1:2379"), "https://127.0.1.1:2379");
    assert.equal(normalizeEndpoint("HTTP://127.0.1.1:2379/"), "http://127.0.1.1:2379");
  });
});
