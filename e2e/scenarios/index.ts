// Every scenario `make e2e` runs, in order.
import { lifecycle } from "./lifecycle.ts";
import type { ScenarioDefinition } from "./types.ts";

export const scenarios: ScenarioDefinition[] = [lifecycle];
