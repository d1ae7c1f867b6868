// The path Quorum takes to a workload cluster's etcd when port 2379 is blocked (issue 18): pods/portforward through
// the workload API server to each Machine's `kube-system/etcd-<host>` mirror Pod, served by the process kubelet's
// port-forward server, then TLS to etcd with the Machine's own etcd healthcheck-client certificate. Proves what
// kubeadm's kube-apiserver does with the kubelet port the Node reports (its apiserver-kubelet-client certificate
// against the kubelet's --client-ca-file included), not what Quorum does with it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:tls";
import type { KubeConfig } from "@kubernetes/client-node";
import { portForwardDuplex } from "../../test/env/portforward-client.ts";
import { ETCD_CLIENT_PORT } from "../provider/machine-base.ts";
import { kubeadmNodes, workloadKubeConfig } from "./kubeadm-nodes.ts";
import type { Scenario } from "./scenario.ts";

export async function checkEtcdPortForward(s: Scenario): Promise<void> {
  const kubeConfig = await workloadKubeConfig(s);
  for (const node of await kubeadmNodes(s)) {
    const pod = `etcd-${node.host}`;
    let answer: string;
    try {
      answer = await etcdHealthThroughForward(kubeConfig, pod, join(node.dir, "root/etc/kubernetes/pki/etcd"));
    } catch (error) {
      answer = `failed: ${(error as Error).message}`;
    }
    s.check(
      /"health":"true"/.test(answer),
      `${node.machine} (${node.host}): GET /health of etcd over TLS through pods/portforward to kube-system/${pod}:${ETCD_CLIENT_PORT} answers ${answer.split("\r\n").pop()}`,
    );
  }
}

async function etcdHealthThroughForward(kubeConfig: KubeConfig, pod: string, pkiDir: string): Promise<string> {
  const stream = await portForwardDuplex(kubeConfig, "kube-system", pod, ETCD_CLIENT_PORT);
  const pem = (name: string) => readFileSync(join(pkiDir, name), "utf8");
  const tls = connect({
    socket: stream,
    ca: pem("ca.crt"),
    cert: pem("healthcheck-client.crt"),
    key: pem("healthcheck-client.key"),
    // kubeadm's etcd serving certificate names the host and localhost.
    servername: "localhost",
  });
  try {
    return await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => reject(new Error("no answer within 10 s")), 10_000);
      tls.on("secureConnect", () => tls.write("GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
      tls.on("data", (chunk: Buffer) => chunks.push(chunk));
      tls.on("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      tls.on("end", () => {
        clearTimeout(timer);
        resolve(Buffer.concat(chunks).toString("utf8"));
      });
    });
  } finally {
    tls.destroy();
    stream.destroy();
  }
}
