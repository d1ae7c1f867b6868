// A CPU profile of the benchmark's kube-apiserver, from its /debug/pprof (served by default, --profiling=true), for
// finding what the API server spends a phase on: `go tool pprof -top -cum FILE`.
import { createWriteStream } from "node:fs";
import https from "node:https";
import { pipeline } from "node:stream/promises";
import type { KubeConfig } from "@kubernetes/client-node";

/** Profiles the API server of `kubeConfig` (an admin's) for `seconds` and writes the pprof file to `path`. */
export async function profileApiServer(kubeConfig: KubeConfig, seconds: number, path: string): Promise<void> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error("API server profile: the kubeconfig has no current cluster");
  const options: https.RequestOptions = {};
  await kubeConfig.applyToHTTPSOptions(options);
  const url = new URL(`/debug/pprof/profile?seconds=${seconds}`, server);
  const response = await new Promise<import("node:http").IncomingMessage>((resolve, reject) =>
    https.get(url, options, resolve).on("error", reject),
  );
  if (response.statusCode !== 200) {
    response.resume();
    throw new Error(`API server profile: GET ${url.pathname} answered ${response.statusCode}`);
  }
  await pipeline(response, createWriteStream(path));
}
