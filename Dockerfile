# Quorum controller image. Two stages: the build stage has the dev dependencies (TypeScript), compiles src/ to dist/,
# then replaces its node_modules with the production dependencies only, installed with --ignore-scripts (no package's
# install script runs; none of them needs one). The runtime stage runs no npm at all: it copies that node_modules and
# dist/, and runs as a non-root user. test/integration/shipping.test.ts checks the user and command and replays both
# stages, running node dist/main.js --help from the tree installed that way.
#
# The base image is referenced by tag, not digest: pin it (node:20-bookworm-slim@sha256:...) where a registry can
# be asked for the digest. Node 20 is what this tree is tested on (client-node 1.4.0); moving to a current LTS is
# a separate change that also moves the test machines.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# package.json says "type": "module", which dist/ needs; nothing here reads the lock file.
COPY package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# 65532 is the conventional "nonroot" uid of distroless images; the Deployment's runAsUser matches it.
USER 65532:65532
CMD ["node", "dist/main.js"]
