// Test-only fault injection: QUORUM_CRASH_AFTER=<ActionKind>:<n> makes the process exit with 137 (as if
// SIGKILLed) right after the n-th executed action of that kind, before status is written. Off when unset.
import { ACTION_KINDS, type ActionKind } from "../core/actions.ts";

export interface CrashInjector {
  /** Called after an action was carried out; exits the process when it is the chosen one. */
  afterAction(kind: ActionKind): void;
}

export function crashInjectorFromEnv(
  value: string | undefined,
  exit: (code: number) => never = process.exit,
): CrashInjector {
  if (!value) return { afterAction: () => {} };
  const [kind, countText] = value.split(":");
  const count = Number(countText ?? "1");
  if (!ACTION_KINDS.includes(kind as ActionKind) || !Number.isInteger(count) || count < 1) {
    throw new Error(
      `QUORUM_CRASH_AFTER="${value}" is invalid: use <action>:<n> with an action among ${ACTION_KINDS.join(", ")} and n >= 1`,
    );
  }
  let seen = 0;
  return {
    afterAction(executed) {
      if (executed !== kind) return;
      seen++;
      if (seen === count) {
        process.stderr.write(`QUORUM_CRASH_AFTER: exiting with 137 after ${kind} #${seen}\n`);
        exit(137);
      }
    },
  };
}
