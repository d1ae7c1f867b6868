// Create with 1 replica, scale to 3, roll out a new version, scale to 5, back to 3, then to 1.
import type { ScenarioDefinition } from "./types.ts";
import { NEXT_VERSION, VERSION } from "./types.ts";

export const lifecycle: ScenarioDefinition = {
  name: "lifecycle",
  title: "create 1 → scale 3 → rolling upgrade → scale 5 → 3 → 1",
  async run(s) {
    await s.setup({ replicas: 1, version: VERSION });
    await s.operation("scale 1→3", () => s.patch({ replicas: 3 }), { replicas: 3 });
    const before = new Set((await s.machines()).map((machine) => machine.metadata.name));
    const upgrade = await s.operation(`upgrade ${VERSION}→${NEXT_VERSION}`, () => s.patch({ version: NEXT_VERSION }), {
      replicas: 3,
    });
    s.timelineWindow = {
      title: `Rolling upgrade ${VERSION} → ${NEXT_VERSION} of 3 process Machines`,
      from: upgrade.startedAt - 1_000,
      to: upgrade.endedAt + 1_000,
      file: "rolling-upgrade.svg",
    };
    const after = (await s.machines()).map((machine) => machine.metadata.name);
    s.check(
      after.every((name) => !before.has(name)),
      `the upgrade replaced every Machine (before ${[...before].join(", ")}; after ${after.join(", ")})`,
    );
    await s.operation("scale 3→5", () => s.patch({ replicas: 5 }), { replicas: 5 });
    await s.operation("scale 5→3", () => s.patch({ replicas: 3 }), { replicas: 3 });
    await s.operation("scale 3→1", () => s.patch({ replicas: 1 }), { replicas: 1 });
    return 1;
  },
};
