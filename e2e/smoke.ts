import { setTimeout as sleep } from "node:timers/promises";
import { E2EStack } from "./lib/stack.ts";
const t0 = Date.now();
const log = (m: string) => console.log(`${((Date.now() - t0) / 1000).toFixed(1)}s ${m}`);
const stack = await E2EStack.start("smoke");
log(`stack up dir=${stack.dir}`);
await stack.startQuorum();
log("quorum up");
await stack.createCluster({ namespace: "smoke", name: "c1", replicas: Number(process.env.REPLICAS ?? 1), version: "v1.37.2" });
let last = "";
const until = Date.now() + Number(process.env.SECS ?? 240) * 1000;
while (Date.now() < until) {
  const qcp = await stack.controlPlane("smoke", "c1").catch(() => undefined);
  const machines = await stack.machines("smoke", "c1");
  const pms = await stack.processMachines("smoke");
  const line = `machines=${machines.map((m) => `${m.metadata.name}[${m.status?.phase}/${m.status?.nodeRef?.name ?? "-"}]`).join(",")} pm=${pms.map((p) => `${p.metadata.name}:${p.status?.phase}`).join(",")} etcd=${qcp?.status?.etcd?.summary} next=${qcp?.status?.nextAction?.message?.slice(0, 160)}`;
  if (line !== last) log(line);
  last = line;
  await sleep(1000);
}
console.log(stack.provider.lastLogLines(40));
for (const q of stack.quorums) console.log(q.process.lastLogLines(10));
console.log(stack.capi.process.lastLogLines(20));
await stack.stop();
log(`leaked: ${stack.leakedPids().join(",")}`);
