# Quorum controller image. Two stages: the build stage has the dev dependencies (TypeScript), compiles src/ to dist/,
# then replaces its node_modules with the production dependencies only, installed with --ignore-scripts (no package's
# install script runs; none of them needs one). The runtime stage runs no npm at all: it copies that node_modules and
# dist/, and runs as a non-root user. test/integration/shipping.test.ts checks the user and command and replays both
# stages, running node dist/main.js --help from the tree installed that way.
#
# Base image: Node 24, the LTS line maintained the longest (to April 2028; Node 20 reached end of life in April 2026).
# Every production dependency supports it (no engines upper bound in package-lock.json); @kubernetes/client-node stays
# at 1.4.0 because 2.x needs Node >= 22.19, which the test machines (Node 20) do not have.
#
# Pinned by digest: node 24.18.0 on bookworm-slim, sha256:6f7b03f7...1452d below. No registry could be asked here, so the
# digest was not pulled on this machine; it is the one three independent public repositories pin for
# node:24-bookworm-slim (one records it as 24.18.0, July 2026). Digests are immutable, so the build is reproducible; it
# also no longer picks up Debian or Node patch releases by itself. Bump it where a registry can be asked
# (`docker buildx imagetools inspect node:24-bookworm-slim` or `crane digest node:24-bookworm-slim`), in both stages, or
# let Renovate/Dependabot's docker ecosystem do it.
# Not done: a distroless runtime (gcr.io/distroless/nodejs24-debian12, no npm and no shell); its layout could not be
# checked here, and its node is not on PATH, so the Deployment's command would change with it.
# The shipping test replays both stages with the test machine's Node (20): it proves the production tree installed
# with --ignore-scripts loads, not that it loads on Node 24.

FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
ENV NODE_ENV=production
WORKDIR /app
# package.json says "type": "module", which dist/ needs; nothing here reads the lock file.
COPY package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# 65532 is the conventional "nonroot" uid of distroless images; the Deployment's runAsUser matches it.
USER 65532:65532
CMD ["node", "dist/main.js"]
