// client-node 1.4.0 builds a new https.Agent for every request (KubeConfig.applySecurityAuthentication calls
// createAgent each time): no connection is ever reused, so every API call pays a TCP + TLS handshake and a new
// TLS context that parses the client key again. At a thousand clusters that was most of the controller's CPU
// while they converged. This makes a KubeConfig hand out one keep-alive agent per distinct set of TLS options
// (a rotated client certificate gets a new agent; the old one's idle connections close on their own).
import { createHash } from "node:crypto";
import type { Agent } from "node:http";
import type { KubeConfig } from "@kubernetes/client-node";

type AgentFactory = (cluster: unknown, options: Record<string, unknown>) => Agent;

/** How many agents (credential generations) one KubeConfig keeps; older ones are dropped, not destroyed. */
const MAX_AGENTS = 4;

export function reuseConnections(kubeConfig: KubeConfig): KubeConfig {
  const target = kubeConfig as unknown as { createAgent: AgentFactory };
  const create = target.createAgent.bind(kubeConfig);
  const agents = new Map<string, Agent>();
  target.createAgent = (cluster, options) => {
    const key = fingerprint(cluster, options);
    let agent = agents.get(key);
    if (!agent) {
      agent = create(cluster, { ...options, keepAlive: true });
      if (agents.size >= MAX_AGENTS) agents.delete(agents.keys().next().value as string);
      agents.set(key, agent);
    }
    return agent;
  };
  return kubeConfig;
}

function fingerprint(cluster: unknown, options: Record<string, unknown>): string {
  const hash = createHash("sha256");
  const server = (cluster as { server?: string; proxyUrl?: string } | null) ?? {};
  hash.update(`${server.server ?? ""}\0${server.proxyUrl ?? ""}\0`);
  for (const name of Object.keys(options).sort()) {
    const value = options[name];
    if (value === undefined) continue;
    hash.update(`${name}=`);
    hash.update(Buffer.isBuffer(value) ? value : typeof value === "string" ? value : (JSON.stringify(value) ?? ""));
    hash.update("\0");
  }
  return hash.digest("hex");
}
