// A scenario: a name (its namespace and results key), a one-line title, and a body that returns how many replicas
// the control plane should have at the end (the leak checks compare against it).
import type { Scenario } from "../lib/scenario.ts";

export interface ScenarioDefinition {
  name: string;
  title: string;
  run(scenario: Scenario): Promise<number>;
}

export const VERSION = "v1.37.2";
export const NEXT_VERSION = "v1.37.3";
