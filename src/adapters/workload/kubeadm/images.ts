// Image references kubeadm's add-ons use, moved to another tag or repository the way KCP moves kube-proxy's
// (CAPI v1.14 util/container: ModifyImageTag, ModifyImageRepository). Pure.

/** `registry.k8s.io/kube-proxy:v1.36.3` with tag `v1.37.2` (and, when given, repository `my.registry/k8s`). */
export function retagImage(image: string, tag: string, repository?: string): string {
  // A digest pins the old image; the new tag replaces it.
  const withoutDigest = image.split("@")[0];
  const slash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  const name = colon > slash ? withoutDigest.slice(0, colon) : withoutDigest;
  const base = name.slice(name.lastIndexOf("/") + 1);
  const path = repository ? `${repository.replace(/\/+$/, "")}/${base}` : name;
  // Image tags may not contain "+" (Kubernetes versions like v1.37.2+k3s1 are tagged with "_").
  return `${path}:${tag.replace(/\+/g, "_")}`;
}
