// Whether a Machine's own API server serves: GET https://<Machine address>:<port>/readyz, as a load balancer's health
// check asks it. kubeadm's kubelet on a control-plane node registers its Node through its local API server only, so a
// Machine whose kube-apiserver cannot start has no Node and no mirror Pods: dialling it is the only way to name what
// is wrong (src/core/serving.ts). Never throws.
import { request } from "node:https";
import type { ApiServerReadiness, ServingMachine } from "../../ports/index.ts";

/** A live API server answers /readyz in milliseconds; a Machine that does not answer costs a reconcile this. */
export const READYZ_DEADLINE_MS = 2_000;

/**
 * One /readyz call. The server's certificate is not verified (rejectUnauthorized false) and no credentials are sent:
 * /readyz is readable anonymously (kubeadm keeps anonymous auth on; RBAC's system:public-info-viewer), and only the
 * answer's status is read. A 401 or 403 (anonymous access turned off) still proves the server is up and serving.
 */
export function probeReadyz(
  host: string,
  port: number,
  deadlineMs: number = READYZ_DEADLINE_MS,
): Promise<ApiServerReadiness> {
  const url = `https://${host.includes(":") ? `[${host}]` : host}:${port}/readyz`;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: ApiServerReadiness) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const req = request(url, { method: "GET", rejectUnauthorized: false, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("error", (error) => settle({ ready: false, detail: `${url}: ${error.message}` }));
      response.on("end", () => {
        const status = response.statusCode ?? 0;
        if (status === 200) return settle({ ready: true, detail: `${url} ok` });
        if (status === 401 || status === 403)
          return settle({
            ready: true,
            detail: `${url} answered ${status} (anonymous readyz is off; the server is up)`,
          });
        const failed = Buffer.concat(chunks)
          .toString("utf8")
          .split("\n")
          .filter((line) => line.startsWith("[-]"))
          .map((line) => line.slice(3).trim())
          .slice(0, 5);
        settle({
          ready: false,
          detail: `${url} answered ${status}${failed.length > 0 ? ` (failed: ${failed.join(", ")})` : ""}`,
        });
      });
    });
    const timer = setTimeout(
      () => settle({ ready: false, detail: `${url}: no answer within ${deadlineMs} ms` }),
      deadlineMs,
    );
    req.on("error", (error) => settle({ ready: false, detail: `${url}: ${error.message}` }));
    req.end();
  });
}

/** Every Machine dialled in parallel, each under its own deadline; by Machine name. */
export async function apiServersReadiness(
  machines: readonly ServingMachine[],
  port: number,
  probe: (host: string, port: number) => Promise<ApiServerReadiness> = probeReadyz,
): Promise<Record<string, ApiServerReadiness>> {
  const results = await Promise.all(
    machines.map(async (machine) => [machine.name, await probe(machine.address, port)] as const),
  );
  return Object.fromEntries(results);
}
