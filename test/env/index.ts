// The real-process test harness: etcd clusters, kube-apiserver, CRDs and the CAPI core manager on loopback.
// See test/env/README.md.
export * from "./processes.ts";
export * from "./net.ts";
export * from "./tools.ts";
export * from "./etcd.ts";
export * from "./apiserver.ts";
export * from "./kube.ts";
export * from "./crds.ts";
export * from "./capi.ts";
export * from "./controller-manager.ts";
export * from "./wait.ts";
export * from "./tcp-proxy.ts";
export * from "./kubelet-portforward.ts";
