// The process provider as its own process, beside the CAPI core manager and Quorum:
//   node --import tsx e2e/provider/main.ts --kubeconfig FILE [--kubeconfig FILE2 ...] [--state-dir DIR]
//        [--events-file FILE] [--restart-delay 10s] [--poll-interval 300ms]
// Each --kubeconfig is a management cluster it serves (one controller each); all of them share the Machines that run
// (cloud.ts), so a Machine moved by `clusterctl move` from one to another keeps running and is adopted there.
// Every etcd and kube-apiserver it starts runs in its own process group and dies with the provider, however the
// provider dies (the harness's guard, test/env/processes.ts).
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { parseDuration } from "../../src/api/duration.ts";
import { makeTempDir } from "../../test/env/processes.ts";
import { ProcessCloud } from "./cloud.ts";
import { ProcessProvider } from "./provider.ts";

const USAGE = `process provider — CAPI infrastructure + bootstrap provider whose Machines are local processes

  --kubeconfig FILE       a management cluster to serve (required; repeat it to serve several)
  --state-dir DIR         data dirs, certificates and logs of the Machines (default: a temp dir)
  --events-file FILE      append one JSON line per event (process started, member voter, Machine stopped...)
  --restart-delay DUR     how long a crashed etcd/kube-apiserver stays down before it is restarted (default 10s)
  --poll-interval DUR     how often the management API is listed (default 300ms)
`;

function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < 0) throw new Error(`${flag} must be a duration such as 300ms or 10s (got "${text}")`);
  return ms;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: "string", multiple: true },
      "state-dir": { type: "string" },
      "events-file": { type: "string" },
      "restart-delay": { type: "string", default: "10s" },
      "poll-interval": { type: "string", default: "300ms" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const kubeconfigs = values.kubeconfig ?? [];
  if (kubeconfigs.length === 0) throw new Error(`--kubeconfig is required\n${USAGE}`);
  const log = (message: string) => process.stdout.write(`${new Date().toISOString()} ${message}\n`);
  const cloud = new ProcessCloud({
    stateDir: values["state-dir"] ?? makeTempDir("process-provider"),
    ...(values["events-file"] ? { eventsFile: values["events-file"] } : {}),
    restartDelayMs: duration("--restart-delay", values["restart-delay"]),
    log,
  });
  const pollIntervalMs = duration("--poll-interval", values["poll-interval"]);
  const providers = kubeconfigs.map((file) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(file);
    return new ProcessProvider({ kubeConfig, management: file, cloud, pollIntervalMs, log });
  });
  // SIGTERM/SIGINT: the harness's exit handlers SIGKILL every process group this process started.
  log(`process provider started, serving ${kubeconfigs.join(", ")}`);
  for (const provider of providers) provider.start();
}

main().catch((error: unknown) => {
  process.stderr.write(`process provider: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
