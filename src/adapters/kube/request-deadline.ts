// client-node 1.4.0 sends its requests without any deadline: a management API server that accepts the
// connection and then never answers (a half-dead load balancer, a partition after the handshake) leaves the
// call, and the reconcile awaiting it, hanging for ever. Every request of every API client made from a
// KubeConfig passed through here gets an AbortSignal that fires after `timeoutMs`, unless the caller set its
// own (a per-call middleware runs after authentication and so overrides this one).
import type { KubeConfig } from "@kubernetes/client-node";

interface SignalContext {
  getSignal(): AbortSignal | undefined;
  setSignal(signal: AbortSignal): void;
}

type Authenticate = (context: SignalContext) => Promise<void>;

export function withRequestDeadline(kubeConfig: KubeConfig, timeoutMs: number): KubeConfig {
  if (!(timeoutMs > 0)) throw new Error(`request deadline must be a positive number of ms (got ${timeoutMs})`);
  const target = kubeConfig as unknown as { applySecurityAuthentication: Authenticate };
  const authenticate = target.applySecurityAuthentication.bind(kubeConfig);
  target.applySecurityAuthentication = async (context) => {
    await authenticate(context);
    if (!context.getSignal()) context.setSignal(AbortSignal.timeout(timeoutMs));
  };
  return kubeConfig;
}
