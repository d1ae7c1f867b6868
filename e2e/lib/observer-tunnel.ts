// How the e2e observer (lost keys, quorum samples) reaches a kubeadm Machine's etcd: through the side port its firewall
// redirects to etcd's client port (e2e/provider/kubeadm/firewall.ts), never through the system under test. Members
// advertise their client URL on port 2379, which the firewall closes to the run's namespace, so the observer's etcd
// client dials every endpoint, advertised ones included, at the side port instead (the etcd client's tunnel hook).
// Process Machines (loopback) are dialled as they are.
import type { EtcdDialTarget, EtcdTunnel, EtcdTunnelFactory } from "../../src/adapters/etcd/types.ts";
import { targetOf } from "../../src/adapters/etcd/etcd-pods.ts";
import { etcdObserverPort } from "../provider/kubeadm/firewall.ts";

export const observerSidePort: EtcdTunnelFactory = {
  identity: "e2e observer side port",
  open(): EtcdTunnel {
    return {
      dial: async (endpoint: string): Promise<EtcdDialTarget> => {
        const url = new URL(endpoint);
        const { host } = targetOf(endpoint);
        url.port = String(etcdObserverPort(host));
        return { url: `${url.protocol}//${url.host}`, servername: host };
      },
      explain: (endpoint, _sinceMs, cause) => `${endpoint} (dialled at the e2e observer's side port): ${cause}`,
      fix: "check the Machine's firewall (e2e/provider/kubeadm/firewall.ts)",
      close: async () => undefined,
    };
  },
};
