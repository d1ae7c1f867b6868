# Quorum controller image. Two stages: the build stage has the dev dependencies (TypeScript) and compiles src/
# to dist/; the runtime stage holds only production dependencies and dist/, and runs as a non-root user.
# test/integration/shipping.test.ts checks the user and command and replays both stages' npm steps.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
# 65532 is the conventional "nonroot" uid of distroless images; the Deployment's runAsUser matches it.
USER 65532:65532
CMD ["node", "dist/main.js"]
