// The firewall of a kubeadm Machine, as a cloud's security group would have it: etcd's client port answers only the
// cluster's own Machines, so the management cluster (Quorum, in the run's namespace) cannot dial a member and must
// reach etcd through the workload API server (spec.etcd.access: APIServerProxy). Dropped, not refused: a blocked
// dial times out, as it does on a cloud.
//
// The scenario's own observer (lost keys, quorum samples) is not the system under test and keeps a way in: a side port,
// redirected to etcd's client port inside the Machine, that Quorum is never told about (a bastion, in cloud terms).
import { ETCD_CLIENT_PORT } from "../machine-base.ts";
import { BRIDGE_PREFIX } from "../../lib/netns.ts";

/** The port the e2e observer dials a kubeadm Machine's etcd on; redirected to ETCD_CLIENT_PORT by its firewall. */
export const ETCD_OBSERVER_PORT = 12379;

/** The port the e2e observer uses for a Machine at `address`: the side port on the bridge (kubeadm Machines). */
export function etcdObserverPort(address: string): number {
  return address.startsWith(`${BRIDGE_PREFIX}.`) ? ETCD_OBSERVER_PORT : ETCD_CLIENT_PORT;
}

/**
 * nftables rules for the Machine at `address` (10.200.N.M): its cluster's Machines are 10.200.N.1–250 (the load
 * balancer is .254, the bridge gateway, where Quorum's connections come from, 10.200.0.1), and only they may dial
 * etcd's client port; counted, so a test can see the drops.
 */
export function etcdFirewall({ interfaceName, address }: { interfaceName: string; address: string }): string {
  const prefix = address.split(".").slice(0, 3).join(".");
  return [
    "table inet quorum-e2e {",
    "  chain prerouting {",
    "    type nat hook prerouting priority dstnat; policy accept;",
    `    iifname "${interfaceName}" tcp dport ${ETCD_OBSERVER_PORT} counter redirect to :${ETCD_CLIENT_PORT}`,
    "  }",
    "  chain input {",
    "    type filter hook input priority filter; policy accept;",
    `    iifname "${interfaceName}" tcp dport ${ETCD_CLIENT_PORT} ct status dnat accept`,
    `    iifname "${interfaceName}" tcp dport ${ETCD_CLIENT_PORT} ip saddr != ${prefix}.1-${prefix}.250 counter drop`,
    "  }",
    "}",
    "",
  ].join("\n");
}
