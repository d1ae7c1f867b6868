// The process kubelet as a program, started inside a kubeadm Machine's namespaces by the process provider:
//   nsenter -t <pid> -n -m -u -- node --import tsx e2e/provider/kubeadm/kubelet-main.ts --node-name ip-10-200-0-5 \
//     --provider-id process://ns/machine --node-ip 10.200.0.5 --bin-dir bin --log-dir /state/m1/pods
// See kubelet.ts. SIGTERM/SIGINT stop every static pod (SIGTERM, SIGKILL after 10 s) and the port-forward server, and
// exit 0; if the kubelet dies any other way, the harness's guard (test/env/processes.ts) SIGKILLs them.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { leaveTerminationSignalsToCaller } from "../../../test/env/processes.ts";
import { DEFAULTS, ProcessKubelet } from "./kubelet.ts";

const USAGE = `process kubelet — runs a kubeadm node's static pods as local processes, registers its Node

  --node-name NAME              the Node's name: kubeadm names it after the host name, not the CAPI Machine (required)
  --provider-id ID              spec.providerID of the Node (required)
  --node-ip IP                  the Node's InternalIP (required)
  --bin-dir DIR                 the repo's bin/: kube-apiserver-1.37, etcd-3.7, ... (required)
  --log-dir DIR                 one <pod>.log per static pod (required)
  --manifests-dir DIR           static pod manifests (default ${DEFAULTS.manifestsDir})
  --kubeconfig FILE             the node's credentials (default ${DEFAULTS.kubeconfig})
  --bootstrap-kubeconfig FILE   TLS bootstrap credentials when --kubeconfig is missing (default ${DEFAULTS.bootstrapKubeconfig})
  --cert-dir DIR                kubelet-client-current.pem (default ${DEFAULTS.certDir})
  --healthz-address HOST:PORT   GET /healthz answers ok, GET /pods lists the static pods (default ${DEFAULTS.healthzAddress})
  --kubelet-port PORT           the port-forward server's port on --node-ip, reported as the Node's kubeletEndpoint
                                (default ${DEFAULTS.kubeletPort}; 0: a free port)
  --client-ca-file FILE         the port-forward server accepts only client certificates this CA signed
                                (default ${DEFAULTS.clientCaFile}, kubeadm's cluster CA; empty: any client)
  --kubelet-version VERSION     nodeInfo.kubeletVersion (default: the tag of the kube-apiserver static pod's image)
`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "node-name": { type: "string" },
      "provider-id": { type: "string" },
      "node-ip": { type: "string" },
      "bin-dir": { type: "string" },
      "log-dir": { type: "string" },
      "manifests-dir": { type: "string", default: DEFAULTS.manifestsDir },
      kubeconfig: { type: "string", default: DEFAULTS.kubeconfig },
      "bootstrap-kubeconfig": { type: "string", default: DEFAULTS.bootstrapKubeconfig },
      "cert-dir": { type: "string", default: DEFAULTS.certDir },
      "healthz-address": { type: "string", default: DEFAULTS.healthzAddress },
      "kubelet-port": { type: "string", default: String(DEFAULTS.kubeletPort) },
      "client-ca-file": { type: "string", default: DEFAULTS.clientCaFile },
      "kubelet-version": { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const required = (flag: "node-name" | "provider-id" | "node-ip" | "bin-dir" | "log-dir"): string => {
    const value = values[flag];
    if (!value) throw new Error(`--${flag} is required\n${USAGE}`);
    return value;
  };
  const port = (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0 || value > 65535)
      throw new Error(`--kubelet-port ${text}: want a port number, 0-65535 (0: a free port)`);
    return value;
  };
  leaveTerminationSignalsToCaller();
  const kubelet = new ProcessKubelet({
    nodeName: required("node-name"),
    providerID: required("provider-id"),
    nodeIP: required("node-ip"),
    binDir: resolve(required("bin-dir")),
    logDir: resolve(required("log-dir")),
    manifestsDir: values["manifests-dir"],
    kubeconfig: values.kubeconfig,
    bootstrapKubeconfig: values["bootstrap-kubeconfig"],
    certDir: values["cert-dir"],
    healthzAddress: values["healthz-address"],
    kubeletPort: port(values["kubelet-port"]),
    clientCaFile: values["client-ca-file"],
    kubeletVersion: values["kubelet-version"],
  });
  let stopping = false;
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      void kubelet.stop().then(
        () => process.exit(0),
        (error: Error) => {
          process.stderr.write(`process kubelet: stopping failed: ${error.message}\n`);
          process.exit(1);
        },
      );
    });
  }
  await kubelet.start();
}

main().catch((error: unknown) => {
  process.stderr.write(`process kubelet: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
