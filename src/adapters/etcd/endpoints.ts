// The endpoint arithmetic lives in src/api (the controller computes endpoints too, and may not import adapters).
export { endpointsFromAddresses, etcdEndpoints, normalizeEndpoint } from "../../api/endpoints.ts";
