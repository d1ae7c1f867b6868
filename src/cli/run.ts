// The `quorum` command's logic, separate from its entry point (quorum.ts) so tests can call it in-process.
import { KubeConfig } from "@kubernetes/client-node";
import { parseArgs } from "node:util";
import { fetchControlPlane, renderStatus, StatusCommandError } from "./status.ts";

export const CLI_USAGE = `Usage: quorum status <namespace>/<name> [--kubeconfig FILE]

  Prints the etcd members of a QuorumControlPlane with their Machines and Nodes (health, leader, learner),
  its quorum, and the next action Quorum will take with its reason. Reads only the object's status:
  no etcd credentials or workload-cluster access are needed.

  <namespace>/<name>   the QuorumControlPlane; a bare <name> uses the current context's namespace
  --kubeconfig FILE    management cluster kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)
  -h, --help           print this help
`;

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  now: () => Date;
}

/** Runs the CLI; returns the exit code (0 ok, 1 failure, 2 usage error). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { kubeconfig: { type: "string" }, help: { type: "boolean", short: "h", default: false } },
    });
  } catch (error) {
    io.stderr(`quorum: ${(error as Error).message}\n\n${CLI_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout(CLI_USAGE);
    return 0;
  }
  const [command, target, ...extra] = positionals;
  if (command !== "status" || target === undefined || extra.length > 0) {
    const problem =
      command === undefined
        ? "no command given"
        : command !== "status"
          ? `unknown command "${command}"`
          : target === undefined
            ? "status needs <namespace>/<name>"
            : `unexpected argument "${extra[0]}"`;
    io.stderr(`quorum: ${problem}\n\n${CLI_USAGE}`);
    return 2;
  }

  const parts = target.split("/");
  if (parts.length > 2 || parts.some((part) => part === "")) {
    io.stderr(`quorum: "${target}" is not <namespace>/<name> or <name>\n\n${CLI_USAGE}`);
    return 2;
  }

  const kubeConfig = new KubeConfig();
  try {
    if (values.kubeconfig) kubeConfig.loadFromFile(values.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (error) {
    io.stderr(
      `quorum: cannot load kubeconfig ${values.kubeconfig ?? "(default)"}: ${(error as Error).message}; pass --kubeconfig FILE\n`,
    );
    return 1;
  }
  if (!kubeConfig.getCurrentCluster()) {
    io.stderr(
      `quorum: kubeconfig ${values.kubeconfig ?? "(default)"} has no current cluster: set current-context or pass --kubeconfig FILE\n`,
    );
    return 1;
  }

  const [namespace, name] =
    parts.length === 2
      ? parts
      : [kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? "default", parts[0]];

  try {
    const controlPlane = await fetchControlPlane(kubeConfig, namespace, name);
    io.stdout(renderStatus(controlPlane, { now: io.now() }));
    return 0;
  } catch (error) {
    if (error instanceof StatusCommandError) {
      io.stderr(`quorum: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}
