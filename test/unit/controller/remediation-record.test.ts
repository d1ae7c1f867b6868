import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readRemediation, remediationText, writtenRemediation } from "../../../src/controller/remediation-record.ts";

describe("remediation record format", () => {
  const record = { machine: "demo-7f9c2-1", time: Date.parse("2026-12-07T01:02:03.000Z"), retryCount: 2 };

  it("writes KCP's remediation-for shape, its time in ISO 8601", () => {
    assert.deepEqual(JSON.parse(remediationText(record)), {
      machine: "demo-7f9c2-1",
      time: "2026-12-07T01:02:03.000Z",
      retryCount: 2,
    });
    assert.deepEqual(writtenRemediation(record), JSON.parse(remediationText(record)));
  });

  it("reads what it writes, and a record another writer left without a valid time or count as none", () => {
    assert.deepEqual(readRemediation(remediationText(record)), record);
    for (const text of [
      undefined,
      "",
      "null",
      '{"machine":"m","time":"yesterday","retryCount":0}',
      '{"machine":"m","time":"2026-12-07T01:02:03Z","retryCount":-1}',
      '{"machine":"m","time":"2026-12-07T01:02:03Z","retryCount":1.5}',
      '{"time":"2026-12-07T01:02:03Z","retryCount":0}',
    ])
      assert.equal(readRemediation(text), undefined, String(text));
  });
});
