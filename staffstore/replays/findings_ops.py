"""Findings about operations: configuration, performance, incidents, data and security.

Hand-written before any replay ran; the format is described in pool.py.
"""

OPS_FINDINGS = """
## staging-db-pool | Atlas | acme/infra
Q: What is the database connection pool size on staging?
A: 20 connections per pod (DB_POOL_SIZE in the staging overlay) across 6 pods, so up to 120
  against a Postgres max_connections of 200.
first: how many db connections can staging open? i'm worried about the load test
~ What is the database connection pool size on production?
~ What is the Redis connection pool size on staging?
- what is the database connection pool size on staging?
- What's the database connection pool size on staging?
- What is the DB connection pool size on staging?
- On staging, what is the database connection pool size?
- what is the database connection pool size on staging
- What's the size of the database connection pool on staging?

## feature-flag-checkout | Wren | acme/web
Q: Is the new checkout flow enabled for all customers?
A: No. The new_checkout flag is on for 25% of customers in the US and EU and off elsewhere; the
  ramp to 50% is scheduled after the March billing run.
first: is everybody on the new checkout already or is it still behind a flag?
~ Is the new checkout flow enabled for enterprise customers?
~ Is the old checkout flow enabled for all customers?
- is the new checkout flow enabled for all customers?
- Is the new checkout flow enabled for every customer?
- Is the new checkout flow turned on for all customers?
- Is the new checkout flow enabled for all customers yet?
- is the new checkout flow enabled for all customers
- For all customers, is the new checkout flow enabled?

## rate-limit-config | Pico | acme/api
Q: What is the rate limit on the public API?
A: 600 requests per minute per API key with a burst of 100, enforced at the gateway; the /search
  endpoint has its own limit of 60 per minute.
first: a customer asks what rate limit they should design for on our public API
~ What is the rate limit on the internal API?
~ What is the rate limit on the public API for the search endpoint?
- what is the rate limit on the public API?
- What's the rate limit on the public API?
- What is the rate limit for the public API?
- What is the public API's rate limit?
- what's the rate limit on the public api
- What rate limit does the public API have?

## log-retention | Atlas | acme/infra
Q: How long are application logs kept?
A: 30 days in Loki for every environment; audit logs are exported to S3 and kept for 7 years.
first: legal wants to know how long we keep app logs before they're deleted
~ How long are audit logs kept?
~ How long are application metrics kept?
- how long are application logs kept?
- How long do we keep application logs?
- How long are app logs kept?
- How long are the application logs retained?
- how long are application logs kept
- For how long are application logs kept?

## tls-cert-expiry | Atlas | acme/infra
Q: When does the TLS certificate for api.acme.dev expire?
A: On 2025-06-14. cert-manager should renew it from Let's Encrypt 30 days before, but the
  renewal has failed on the DNS-01 challenge since May 2.
first: got a cert expiry warning email for api.acme.dev, is auto-renew broken?
~ When does the TLS certificate for web.acme.dev expire?
~ When does the TLS certificate for api.acme.dev renew?
- when does the TLS certificate for api.acme.dev expire?
- When does the TLS cert for api.acme.dev expire?
- When does the api.acme.dev TLS certificate expire?
- When will the TLS certificate for api.acme.dev expire?
- when does the tls certificate for api.acme.dev expire
- What date does the TLS certificate for api.acme.dev expire?

## env-var-sentry | Wren | acme/web
Q: Which environment variable sets the Sentry DSN in acme/web?
A: NEXT_PUBLIC_SENTRY_DSN; the older SENTRY_DSN is read only by the server build and is empty in
  production.
first: sentry isn't receiving frontend errors from prod, which env var is it reading?
~ Which environment variable sets the Sentry DSN in acme/api?
~ Which environment variable sets the Sentry release in acme/web?
- which environment variable sets the Sentry DSN in acme/web?
- Which env var sets the Sentry DSN in acme/web?
- What environment variable sets the Sentry DSN in acme/web?
- In acme/web, which environment variable sets the Sentry DSN?
- which environment variable sets the sentry dsn in acme/web
- Which environment variable is used to set the Sentry DSN in acme/web?

## k8s-resource-limits | Atlas | acme/infra
Q: What are the CPU and memory limits for the api pods in production?
A: Requests of 500m CPU and 1 GiB, limits of 2 CPU and 2 GiB, set in the production overlay of
  the api deployment.
first: before I tune gunicorn workers, what resources do the prod api pods get?
~ What are the CPU and memory limits for the api pods in staging?
~ What are the CPU and memory limits for the worker pods in production?
- what are the CPU and memory limits for the api pods in production?
- What are the CPU and memory limits for the API pods in prod?
- What are the cpu and memory limits on the api pods in production?
- In production, what are the CPU and memory limits for the api pods?
- What are the memory and CPU limits for the api pods in production?
- what are the CPU & memory limits for the api pods in production

## search-p99 | Scout | acme/search
Q: Why did the p99 latency of the search endpoint double last week?
A: A new relevance boost runs one SQL query per result (N+1); for queries with 50+ results that
  adds about 400 ms. Batching the lookup brings p99 back to 310 ms.
first: grafana shows search p99 went from ~300ms to ~650ms since last tuesday
other: The search cluster lost two of its six data nodes to a spot-instance reclaim on Tuesday
  and ran under-provisioned all week.
~ Why did the p95 latency of the search endpoint double last week?
~ Why did the p99 latency of the search endpoint double last month?
- why did the p99 latency of the search endpoint double last week?
- Why did the search endpoint's p99 latency double last week?
- Why did p99 latency on the search endpoint double last week?
- Why has the p99 latency of the search endpoint doubled last week?
- why did the p99 latency of the search endpoint double last week
- Last week, why did the p99 latency of the search endpoint double?

## cold-start | Pico | acme/api
Q: Why does the first request after a deploy take 8 seconds?
A: The app loads the ML ranking model lazily on first use, and reading the 600 MB model file takes
  about 7 seconds; warming it in the readiness probe removes the delay.
first: right after every deploy the first call to the api hangs for ~8s
other: The first request opens the database pool and runs the migration check; moving both to
  startup removes the delay.
~ Why does the first request after a deploy take 3 seconds?
~ Why does the first request after a restart take 8 seconds?
- why does the first request after a deploy take 8 seconds?
- Why does the first request after a deploy take eight seconds?
- Why does the first request after deploying take 8 seconds?
- After a deploy, why does the first request take 8 seconds?
- Why does the first request after a deploy take 8s?
- why does the 1st request after a deploy take 8 seconds

## slow-migration | Kernel | acme/billing
Q: How long will the invoices table migration take in production?
A: About 40 minutes: the table has 180 million rows and the migration rewrites it to add a NOT
  NULL column with a default. Adding the column nullable and backfilling in batches avoids the
  lock.
first: I need to schedule the invoices migration, is it going to lock the table for long?
~ How long will the invoices table migration take in staging?
~ How long will the payments table migration take in production?
- how long will the invoices table migration take in production?
- How long will the invoices table migration take in prod?
- How long is the invoices table migration going to take in production?
- In production, how long will the invoices table migration take?
- How long will the migration of the invoices table take in production?
- how long will the invoices table migration take in production

## bundle-size | Wren | acme/web
Q: Why did the acme/web JavaScript bundle grow by 300 KB?
A: The date picker imports the whole of moment with all locales; replacing it with date-fns, or
  importing only the en locale, removes 290 KB.
first: bundle analyzer says main.js jumped 300kb in the last release
other: Source maps are emitted inline in the production bundle since devtool was set to
  inline-source-map.
~ Why did the acme/web JavaScript bundle grow by 30 KB?
~ Why did the acme/web CSS bundle grow by 300 KB?
- why did the acme/web JavaScript bundle grow by 300 KB?
- Why did the acme/web JS bundle grow by 300 KB?
- Why did acme/web's JavaScript bundle grow by 300 KB?
- Why did the acme/web JavaScript bundle grow by 300KB?
- why did the javascript bundle of acme/web grow by 300 kb
- Why has the acme/web JavaScript bundle grown by 300 KB?

## redis-hit-rate | Atlas | acme/api
Q: Why is the Redis cache hit rate only 40%?
A: Cache keys include the request ID through the logging middleware's context, so almost no two
  requests share a key; keying on the route and query string raises the hit rate to 85% in
  staging.
first: the redis dashboard says we only hit the cache 40% of the time, that seems awful
other: Most keys are written with a 30-second TTL while the dashboards poll every minute, so
  entries expire before they are read again.
~ Why is the Redis cache hit rate only 60%?
~ Why is the CDN cache hit rate only 40%?
- why is the Redis cache hit rate only 40%?
- Why is the redis cache hit rate only 40 percent?
- Why's the Redis cache hit rate only 40%?
- Why is the Redis cache hit rate just 40%?
- why is the redis cache hit rate only 40%
- Why is our Redis cache hit rate only 40%?

## query-seq-scan | Kernel | acme/api
Q: Why does the orders list query do a sequential scan?
A: The filter uses lower(email) and the index is on email, so the planner cannot use it; an
  expression index on lower(email) turns it into an index scan (2.3 s to 4 ms).
first: EXPLAIN on the orders list shows a seq scan over 12M rows, why isn't it using the index?
other: Table statistics are stale because autovacuum is disabled on orders, so the planner thinks
  the table has 1,000 rows; ANALYZE fixes the plan.
- why does the orders list query do a sequential scan?
- Why does the orders list query do a seq scan?
- Why does the query for the orders list do a sequential scan?
- Why is the orders list query doing a sequential scan?
- why does the orders list query do a sequential scan
- Why does the orders list query use a sequential scan?

## gc-pauses | Atlas | acme/search
Q: What causes the long GC pauses in the search service?
A: The JVM heap is 31 GB with G1 and the indexer allocates large short-lived arrays; humongous
  allocations trigger full GCs. Raising G1HeapRegionSize to 32m stops them.
first: the search service freezes for 2-3 seconds every few minutes, gc logs show big pauses
other: A heap dump on every OOM warning is enabled in the JVM flags, and each dump pauses the
  process for about 2 seconds.
- what causes the long GC pauses in the search service?
- What's causing the long GC pauses in the search service?
- What causes the long garbage collection pauses in the search service?
- In the search service, what causes the long GC pauses?
- what causes the long gc pauses in the search service
- What is behind the long GC pauses in the search service?

## outage-root-cause | Kernel | acme/infra
Q: What was the root cause of the April 9 outage?
A: A Terraform apply replaced the production load balancer's security group, dropping inbound 443
  for 23 minutes; the plan showed the replacement but was approved without review.
first: writing the postmortem for april 9, what actually took us down?
~ What was the root cause of the April 19 outage?
~ What was the root cause of the April 9 slowdown?
- what was the root cause of the April 9 outage?
- What was the root cause of the outage on April 9?
- What was the root cause of the 9 April outage?
- What was the root cause of the April 9th outage?
- what was the root cause of the april 9 outage
- What was the root cause for the April 9 outage?

## disk-full-db | Atlas | acme/infra
Q: Why did the reporting database run out of disk?
A: WAL piled up because a logical replication slot for a decommissioned analytics consumer was
  never dropped; it retained 900 GB of WAL.
first: reporting db is at 100% disk and refusing writes, what's eating the space?
other: A debug setting left log_statement=all on, and 700 GB of query logs accumulated in pg_log.
- why did the reporting database run out of disk?
- Why did the reporting database run out of disk space?
- Why did the reporting DB run out of disk?
- Why did the reporting database run out of disk
- What made the reporting database run out of disk?
- How did the reporting database run out of disk?

## alert-noise | Pico | acme/infra
Q: Which alerts paged the on-call most last month?
A: HighLatencyAPI (41 pages, mostly during the nightly batch), DiskSpaceLow on the build runners
  (27) and CertExpirySoon (12, all duplicates for one certificate).
first: on-call is burning out, which alerts are actually paging us the most?
~ Which alerts paged the on-call most last week?
~ Which alerts paged the on-call least last month?
- which alerts paged the on-call most last month?
- Which alerts paged on-call the most last month?
- What alerts paged the on-call most last month?
- Last month, which alerts paged the on-call most?
- Which alerts paged the on-call the most last month?
- which alerts paged the oncall most last month

## backup-restore-time | Atlas | acme/infra
Q: How long does a full restore of the production database take?
A: 3 hours 40 minutes in the February drill: 2h50m to download the 1.2 TB base backup and 50
  minutes of WAL replay.
first: for the DR plan, how long would it take us to restore prod from backups?
~ How long does a full restore of the staging database take?
~ How long does a full backup of the production database take?
- how long does a full restore of the production database take?
- How long does a full restore of the prod database take?
- How long does a full restore of the production DB take?
- How long does it take to fully restore the production database?
- how long does a full restore of the production database take
- How long would a full restore of the production database take?

## cost-spike | Scout | acme/infra
Q: Why did the AWS bill go up by $4,000 in May?
A: A forgotten load test left 12 c5.4xlarge instances running for 19 days in us-west-2, plus
  their NAT gateway traffic.
first: finance flagged a 4k jump in the AWS bill for May, what is it?
~ Why did the AWS bill go up by $4,000 in June?
~ Why did the GCP bill go up by $4,000 in May?
- why did the AWS bill go up by $4,000 in May?
- Why did the AWS bill go up by $4000 in May?
- Why did the AWS bill increase by $4,000 in May?
- Why did our AWS bill go up by $4,000 in May?
- In May, why did the AWS bill go up by $4,000?
- why did the aws bill go up by $4,000 in may

## etl-duplicates | Kernel | acme/data-pipeline
Q: Why does the daily ETL load duplicate rows into the events table?
A: The job retries a failed batch with INSERT instead of MERGE, so a batch that partly succeeded
  before the timeout is loaded twice; about 0.3% of rows are duplicates.
first: analytics found duplicate events in the warehouse, seems to come from the daily load
other: The source API returns overlapping pages when events arrive during pagination, and the
  loader does not deduplicate on event_id.
~ Why does the hourly ETL load duplicate rows into the events table?
~ Why does the daily ETL load duplicate rows into the users table?
- why does the daily ETL load duplicate rows into the events table?
- Why does the daily ETL load duplicate rows in the events table?
- Why is the daily ETL loading duplicate rows into the events table?
- Why does the daily ETL job load duplicate rows into the events table?
- why does the daily etl load duplicate rows into the events table
- How come the daily ETL loads duplicate rows into the events table?

## schema-drift | Scout | acme/data-pipeline
Q: Which upstream change broke the signup dashboard?
A: The web team renamed the "plan" property to "plan_id" in the signup event on May 20; the dbt
  model still selects "plan", which is now always null.
first: the signup dashboard shows 0 paid plans since the 20th, did something change upstream?
other: The billing team changed the signup event's timestamp from seconds to milliseconds, so the
  dashboard's date filter excludes every new row.
- which upstream change broke the signup dashboard?
- What upstream change broke the signup dashboard?
- Which upstream change broke the signups dashboard?
- Which change upstream broke the signup dashboard?
- which upstream change broke the signup dashboard
- Which upstream change was it that broke the signup dashboard?

## airflow-dag-stuck | Atlas | acme/data-pipeline
Q: Why is the customer_sync DAG stuck in queued?
A: The DAG uses the "sync" pool, which has 2 slots, and both are held by zombie tasks from a
  worker killed during the node upgrade; clearing them frees the pool.
first: customer_sync has been "queued" for 5 hours and never starts
other: The DAG has been paused since the Airflow 2.8 upgrade because is_paused_upon_creation was
  set when it was re-imported.
~ Why is the invoice_sync DAG stuck in queued?
~ Why is the customer_sync DAG stuck in running?
- why is the customer_sync DAG stuck in queued?
- Why is the customer_sync DAG stuck in "queued"?
- Why is the customer_sync dag stuck in queued?
- Why's the customer_sync DAG stuck in queued?
- why is the customer_sync DAG stuck in queued
- Why does the customer_sync DAG stay stuck in queued?

## gdpr-deletion | Kernel | acme/data-pipeline
Q: Are deleted users removed from the analytics warehouse?
A: Not fully: the deletion job removes rows from the users and events tables, but the daily
  snapshots in the archive schema keep them for 400 days.
first: a customer invoked GDPR erasure, does that reach the warehouse too?
~ Are deleted users removed from the production database?
~ Are deleted orders removed from the analytics warehouse?
- are deleted users removed from the analytics warehouse?
- Are deleted users removed from the analytics warehouse
- Do deleted users get removed from the analytics warehouse?
- Are deleted users also removed from the analytics warehouse?
- Are deleted users removed from the analytics data warehouse?
- are deleted users actually removed from the analytics warehouse?

## sso-okta-error | Scout | acme/auth
Q: Why does Okta SSO fail with "invalid audience" for new tenants?
A: New tenants get the audience URI https://auth.acme.dev/saml while the Okta app template still
  sends https://acme.dev/saml; existing tenants were migrated by hand.
first: every new enterprise tenant hits "invalid audience" when they try to set up Okta SSO
~ Why does Azure AD SSO fail with "invalid audience" for new tenants?
~ Why does Okta SSO fail with "invalid audience" for existing tenants?
- why does Okta SSO fail with "invalid audience" for new tenants?
- Why does Okta SSO fail with invalid audience for new tenants?
- Why does the Okta SSO fail with "invalid audience" for new tenants?
- For new tenants, why does Okta SSO fail with "invalid audience"?
- why does okta sso fail with "invalid audience" for new tenants
- Why does Okta SSO fail with an "invalid audience" error for new tenants?

## secret-in-repo | Atlas | acme/web
Q: Was the leaked Stripe key in acme/web ever used by anyone else?
A: No: it was a restricted test-mode key, and Stripe's request log shows no calls from outside
  our IP ranges before it was rolled on May 14.
first: someone committed a stripe key to acme/web last month, did anyone use it?
- was the leaked Stripe key in acme/web ever used by anyone else?
- Was the leaked stripe key in acme/web ever used by anyone else?
- Was the leaked Stripe key in acme/web used by anyone else?
- Was the Stripe key leaked in acme/web ever used by anyone else?
- Did anyone else ever use the leaked Stripe key in acme/web?
- was the leaked Stripe key in acme/web ever used by somebody else

## password-hashing | Kernel | acme/auth
Q: Which algorithm does acme/auth use to hash passwords?
A: Argon2id with 64 MB of memory and 3 iterations; accounts created before 2021 still carry
  bcrypt hashes and are rehashed at their next login.
first: an auditor wants to know how we store passwords
~ Which algorithm does acme/auth use to hash API keys?
~ Which algorithm does acme/api use to hash passwords?
- which algorithm does acme/auth use to hash passwords?
- What algorithm does acme/auth use to hash passwords?
- Which hashing algorithm does acme/auth use for passwords?
- Which algorithm is used by acme/auth to hash passwords?
- which algorithm does acme/auth use to hash passwords
- What algorithm does acme/auth use for hashing passwords?

## mfa-bypass | Scout | acme/auth
Q: Can users skip MFA through the password reset flow?
A: Yes: after a reset the session is created with mfa_verified=true; the fix that requires MFA
  after a reset is PR 1184, not yet deployed.
first: pentest report says MFA can be bypassed via password reset, is that real?
~ Can admins skip MFA through the password reset flow?
~ Can users skip MFA through the email change flow?
- can users skip MFA through the password reset flow?
- Can users skip MFA via the password reset flow?
- Can users bypass MFA through the password reset flow?
- Through the password reset flow, can users skip MFA?
- can users skip mfa through the password reset flow
- Can a user skip MFA through the password reset flow?

## scout-grpc-timeouts | Scout | acme/search
Q: What did Scout find about the gRPC deadline errors between search and ranking?
A: Search sets a 200 ms deadline but the ranking service's p95 is 240 ms under load, so 3% of
  calls fail with DEADLINE_EXCEEDED at peak; a 400 ms deadline with hedged requests fixes it.
first: Scout, search is logging lots of DEADLINE_EXCEEDED when it calls ranking, can you check?
- what did Scout find about the gRPC deadline errors between search and ranking?
- What did Scout find about the grpc deadline errors between search and ranking?
- What did Scout find regarding the gRPC deadline errors between search and ranking?
- What did Scout find about the gRPC deadline errors between ranking and search?
- What were Scout's findings about the gRPC deadline errors between search and ranking?
- what did scout find about the grpc deadline errors between search and ranking

## atlas-terraform-drift | Atlas | acme/infra
Q: What did Atlas find about the Terraform drift in the production account?
A: 23 resources drifted: 19 security group rules added by hand during the April 9 incident and 4
  S3 lifecycle rules changed in the console.
first: terraform plan in prod wants to change a bunch of stuff nobody touched, Atlas can you look?
- what did Atlas find about the Terraform drift in the production account?
- What did Atlas find about the terraform drift in the prod account?
- What did Atlas find about Terraform drift in the production account?
- What did Atlas discover about the Terraform drift in the production account?
- Remind me what Atlas found about the Terraform drift in the production account?
- what did atlas find about the terraform drift in the production account

## pico-cdn-purge | Pico | acme/web
Q: Why do CDN purges take 20 minutes to reach all edges?
A: Purges are sent one URL at a time through a rate-limited API (10 per second) for about 12,000
  URLs; purging by surrogate key instead takes under a minute.
first: after a deploy, some users still see the old assets for ~20 minutes
~ Why do CDN purges take 2 minutes to reach all edges?
- why do CDN purges take 20 minutes to reach all edges?
- Why do CDN purges take 20 minutes to reach every edge?
- Why does it take 20 minutes for CDN purges to reach all edges?
- Why do CDN purges take twenty minutes to reach all edges?
- why do cdn purges take 20 min to reach all edges
- Why do the CDN purges take 20 minutes to reach all edges?

## scout-email-bounces | Scout | acme/api
Q: Why did transactional email bounces jump on Monday?
A: The SPF record lost the SendGrid include during the DNS migration, so Gmail and Outlook
  rejected our messages; the record was fixed on Tuesday at 10:40.
first: bounce rate for password reset emails went from 1% to 18% on monday
~ Why did transactional email bounces jump on Tuesday?
~ Why did marketing email bounces jump on Monday?
- why did transactional email bounces jump on Monday?
- Why did transactional email bounces spike on Monday?
- Why did the transactional email bounces jump on Monday?
- On Monday, why did transactional email bounces jump?
- why did transactional email bounces jump on monday
- Why did bounces of transactional emails jump on Monday?

## atlas-k8s-upgrade | Atlas | acme/infra
Q: Is the production cluster ready for the Kubernetes 1.29 upgrade?
A: Not yet: two Helm charts still use the removed flowcontrol.apiserver.k8s.io/v1beta2 API, and
  the ingress controller must go to 1.10 first.
first: we are planning the k8s 1.29 upgrade for prod next sprint, anything blocking?
~ Is the production cluster ready for the Kubernetes 1.30 upgrade?
~ Is the staging cluster ready for the Kubernetes 1.29 upgrade?
- is the production cluster ready for the Kubernetes 1.29 upgrade?
- Is the prod cluster ready for the Kubernetes 1.29 upgrade?
- Is the production cluster ready for the k8s 1.29 upgrade?
- Is the production cluster ready to upgrade to Kubernetes 1.29?
- is the production cluster ready for the kubernetes 1.29 upgrade
- Is our production cluster ready for the Kubernetes 1.29 upgrade?

## pico-image-size | Pico | acme/api
Q: Why is the acme/api Docker image 2.1 GB?
A: It is built from python:3.12 (not slim) and keeps the build toolchain and pip cache; a
  multi-stage build on python:3.12-slim brings it to 240 MB.
first: pulling the api image takes forever on new nodes, it's over 2 gigs
~ Why is the acme/web Docker image 2.1 GB?
- why is the acme/api Docker image 2.1 GB?
- Why is the acme/api docker image 2.1GB?
- Why's the acme/api Docker image 2.1 GB?
- Why is acme/api's Docker image 2.1 GB?
- Why is the Docker image for acme/api 2.1 GB?
- why is the acme/api Docker image 2.1 GB??

## atlas-dns-latency | Atlas | acme/infra
Q: Why do DNS lookups inside the cluster sometimes take 5 seconds?
A: Pods use ndots:5, so external names first try five search domains, and conntrack races on
  parallel A/AAAA UDP queries drop packets; 5 s is the resolver timeout. single-request-reopen
  and ndots:2 fix it.
first: random 5 second stalls on outbound http calls from pods, strace shows it's DNS
~ Why do DNS lookups inside the cluster sometimes take 10 seconds?
- why do DNS lookups inside the cluster sometimes take 5 seconds?
- Why do DNS lookups in the cluster sometimes take 5 seconds?
- Why do DNS lookups inside the cluster occasionally take 5 seconds?
- Why do in-cluster DNS lookups sometimes take 5 seconds?
- why do dns lookups inside the cluster sometimes take 5 seconds
- Why do DNS lookups inside the cluster sometimes take five seconds?

## pico-websocket-drops | Pico | acme/api
Q: Why do websocket connections drop after 60 seconds?
A: The load balancer's idle timeout is 60 seconds and the server sends no pings; 25-second pings
  keep the connections open.
first: the live dashboard disconnects every minute on the dot
other: The Node server's keepAliveTimeout is 60 seconds and the proxy does not forward upgrade
  keep-alives.
~ Why do websocket connections drop after 30 seconds?
- why do websocket connections drop after 60 seconds?
- Why do WebSocket connections drop after 60 seconds?
- Why do websocket connections drop after sixty seconds?
- Why do websocket connections get dropped after 60 seconds?
- why do websocket connections drop after 60 secs
- After 60 seconds, why do websocket connections drop?

## atlas-vpn-split | Atlas | acme/infra
Q: Why can't engineers reach the staging database over the VPN?
A: The VPN pushes routes for 10.0.0.0/16 only, and staging moved to 10.8.0.0/16 in the network
  migration; adding the route to the VPN profile restores access.
first: since yesterday I can't connect to the staging db from home even with the VPN on
~ Why can't engineers reach the production database over the VPN?
- why can't engineers reach the staging database over the VPN?
- Why can't engineers reach the staging DB over the VPN?
- Why can engineers not reach the staging database over the VPN?
- Why can't engineers reach the staging database over VPN?
- why cant engineers reach the staging database over the vpn
- Over the VPN, why can't engineers reach the staging database?

## kernel-retry-storm | Kernel | acme/api
Q: What caused the retry storm against the payments provider on Friday?
A: Every client retried immediately on 503 with no jitter, and the circuit breaker was off
  because of a config typo (circuit_breaker: flase); requests grew 12x in four minutes.
first: the payments provider throttled us on friday, their graphs show a huge spike from us
~ What caused the retry storm against the email provider on Friday?
- what caused the retry storm against the payments provider on Friday?
- What caused the retry storm against the payment provider on Friday?
- What caused Friday's retry storm against the payments provider?
- On Friday, what caused the retry storm against the payments provider?
- what caused the retry storm against the payments provider on friday
- What was the cause of the retry storm against the payments provider on Friday?
"""
