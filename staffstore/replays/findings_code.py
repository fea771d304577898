"""Findings about code: CI and builds, bugs, repositories, front ends and tooling.

Hand-written before any replay ran; the format is described in pool.py.
"""

CODE_FINDINGS = """
## nightly-timeout | Scout | acme/api
Q: Why does the nightly CI run of acme/api time out?
A: The integration suite waits for a Postgres container whose health check polls port 5433
  instead of 5432, so the job hangs until the 60-minute limit.
first: The nightly on acme/api timed out again. Can someone dig into why?
other: The nightly runner pool was cut from 8 machines to 2, so the integration suite queues for
  over an hour and hits the limit.
~ Why does the nightly CI run of acme/web time out?
~ Why does the weekly CI run of acme/api time out?
- why does the nightly CI run of acme/api time out
- Why does the acme/api nightly CI run time out?
- What's causing the nightly CI run of acme/api to time out?
- Why do the nightly CI runs of acme/api time out?
- hey, why does the nightly ci run of acme/api keep timing out?
- Do we know why acme/api's nightly CI times out?

## flaky-login-test | Kernel | acme/web
Q: Why is the login e2e test in acme/web flaky?
A: The test clicks "Sign in" before the CSRF token request resolves; about 1 run in 15 posts an
  empty token and gets a 403.
first: test_login_e2e failed on my PR but passed on retry, what's going on with it?
other: The login e2e test shares a seeded user with the signup test; when both run in parallel
  the signup test resets the password.
~ Why is the signup e2e test in acme/web flaky?
~ Why is the login e2e test in acme/mobile flaky?
- why is the login e2e test in acme/web flaky?
- Why's the acme/web login e2e test flaky?
- what makes the login e2e test in acme/web flaky
- Why is the login end-to-end test in acme/web flaky?
- why is the login e2e test in acme/web so flaky
- Why does the login e2e test in acme/web flake?

## docker-cache-miss | Atlas | acme/infra
Q: Why does the Docker build in CI never reuse the layer cache?
A: The Dockerfile copies the whole repository before running pip install, so any file change
  invalidates the dependency layer; the cache key also includes the commit SHA.
first: every CI docker build takes 14 minutes from scratch, is the layer cache even working?
~ Why does the Docker build on my laptop never reuse the layer cache?
- Why does the docker build in CI never reuse the layer cache?
- why doesn't the CI docker build ever reuse the layer cache?
- Why does the Docker build in CI never use the layer cache?
- In CI, why does the Docker build never reuse the layer cache?
- why does the docker build in ci never reuse the layer cahce
- Why is the layer cache never reused by the Docker build in CI?

## release-pipeline-node | Scout | acme/web
Q: Which Node version does the acme/web release pipeline use?
A: Node 18.19, pinned in .nvmrc; the release workflow reads it through actions/setup-node with
  node-version-file.
first: what node does our release pipeline actually run? local builds on 20 behave differently
~ Which Node version does the acme/docs release pipeline use?
~ Which Python version does the acme/web release pipeline use?
- which node version does the acme/web release pipeline use?
- What Node version does the acme/web release pipeline use?
- What version of Node does the acme/web release pipeline use?
- Which Node version is the acme/web release pipeline using?
- which Node version does acme/web's release pipeline use
- Which node version do we use in the acme/web release pipeline?

## coverage-drop | Kernel | acme/billing
Q: Why did test coverage in acme/billing drop from 84% to 71%?
A: After the move to pyproject.toml the coverage config omits nothing, so the generated protobuf
  modules (about 9,000 untested lines) are now counted.
first: codecov says billing went from 84 to 71 percent coverage overnight, did we delete tests?
~ Why did test coverage in acme/billing drop from 84% to 79%?
~ Why did test coverage in acme/api drop from 84% to 71%?
- why did test coverage in acme/billing drop from 84% to 71%?
- Why did acme/billing's test coverage drop from 84% to 71%?
- What made test coverage in acme/billing drop from 84% to 71%?
- why did coverage in acme/billing fall from 84% to 71%
- Why did the test coverage in acme/billing go down from 84% to 71%?
- How come test coverage in acme/billing dropped from 84% to 71%?

## lint-job-slow | Pico | acme/api
Q: Why does the lint job in acme/api take 9 minutes?
A: mypy runs without its cache because the CI workspace is fresh each time; restoring .mypy_cache
  from the previous main build cuts the job to under 2 minutes.
first: lint is the slowest job in acme/api CI now, 9 minutes for lint?? why
other: ESLint type-aware rules were enabled for the whole repository, so every file is
  type-checked twice.
~ Why does the lint job in acme/api take 4 minutes?
~ Why does the test job in acme/api take 9 minutes?
- why does the lint job in acme/api take 9 minutes?
- Why does acme/api's lint job take 9 minutes?
- why does the lint job in acme/api take nine minutes
- What makes the lint job in acme/api take 9 minutes?
- Why does the lint job in acme/api take 9 mins?
- Why is the lint job in acme/api taking 9 minutes?

## windows-path-failure | Kernel | acme/cli
Q: Why do the acme/cli tests fail on Windows?
A: Two tests build expected paths with "/" joins; on Windows the tool returns backslash paths, so
  the string comparisons fail. Using pathlib in the assertions fixes it.
first: the windows leg of the acme/cli matrix is red, linux and mac are fine
~ Why do the acme/cli tests fail on macOS?
~ Why do the acme/cli tests pass on Windows?
- why do the acme/cli tests fail on windows?
- Why do acme/cli's tests fail on Windows?
- On Windows, why do the acme/cli tests fail?
- Why are the acme/cli tests failing on Windows?
- why do the acme/cli tests fail on windows
- What causes the acme/cli tests to fail on Windows?

## pre-commit-hook | Wren | acme/web
Q: Why does the pre-commit hook in acme/web reformat files it did not touch?
A: The hook runs prettier on the whole repository instead of the staged files; the lint-staged
  config is present but not wired into .husky/pre-commit.
first: every time I commit in acme/web, prettier rewrites like 40 files I never opened
- why does the pre-commit hook in acme/web reformat files it didn't touch?
- Why does acme/web's pre-commit hook reformat files it did not touch?
- Why does the pre-commit hook in acme/web reformat files that it did not touch?
- why is the pre-commit hook in acme/web reformatting files it did not touch
- Why does the acme/web pre-commit hook reformat untouched files?
- how come the pre-commit hook in acme/web reformats files it didn't touch?

## double-charge | Kernel | acme/billing
Q: Why were some customers charged twice on March 3?
A: The retry worker re-sent payment intents whose first attempt timed out client-side but
  succeeded at the provider; the idempotency key included the attempt number, so the provider
  treated the retry as new.
first: support has 37 tickets about double charges from march 3rd, what happened?
other: A deploy at 14:02 ran two copies of the invoice scheduler for 11 minutes, and both picked
  up the same batch.
~ Why were some customers charged twice on March 4?
~ Why were some customers charged three times on March 3?
- why were some customers charged twice on march 3?
- Why were some customers double charged on March 3?
- Why did some customers get charged twice on March 3?
- On March 3, why were some customers charged twice?
- why were some customers charged twice on 3 March?
- What caused some customers to be charged twice on March 3?

## memory-leak-worker | Atlas | acme/api
Q: What is leaking memory in the acme/api background worker?
A: The per-request httpx.Client created in the webhook sender is never closed; each keeps a
  connection pool, about 2 MB per thousand webhooks.
first: the api worker pods get OOM-killed every ~6 hours, is something leaking?
other: The LRU cache on the template renderer has no maxsize, so it grows with every tenant's
  custom template.
- what is leaking memory in the acme/api background worker?
- What's leaking memory in the acme/api background worker?
- What is leaking memory in acme/api's background worker?
- In the acme/api background worker, what is leaking memory?
- what is leaking memory in the acme/api backround worker
- What's the memory leak in the acme/api background worker?

## timezone-report | Kernel | acme/billing
Q: Why are the monthly invoices dated one day early for customers in Asia?
A: Invoice dates are computed at midnight UTC and formatted in the server's local time
  (America/New_York) instead of the customer's time zone, which shifts them back a day.
first: customers in Tokyo and Singapore say their invoice says the 30th when it should be the 1st
~ Why are the monthly invoices dated one day early for customers in Europe?
~ Why are the weekly invoices dated one day early for customers in Asia?
- why are the monthly invoices dated one day early for customers in Asia?
- Why are monthly invoices dated a day early for customers in Asia?
- Why are the monthly invoices dated one day early for Asian customers?
- For customers in Asia, why are the monthly invoices dated one day early?
- why are the monthly invoices dated 1 day early for customers in asia?
- How come the monthly invoices are dated one day early for customers in Asia?

## search-empty-results | Scout | acme/search
Q: Why does search return no results for queries with an apostrophe?
A: The query builder escapes the apostrophe twice, so "o'brien" becomes o\\\\'brien and matches
  nothing; removing the second escape in build_query fixes it.
first: searching for O'Brien finds nothing even though there are 200 O'Brien records
- why does search return no results for queries with an apostrophe?
- Why does the search return no results for queries with apostrophes?
- Why does search return nothing for queries with an apostrophe?
- Why does search return zero results for queries that have an apostrophe?
- why does search return no results for queries with an apostrophe
- Why do queries with an apostrophe return no search results?

## upload-413 | Pico | acme/web
Q: Why do file uploads over 10 MB fail with a 413?
A: The ingress sets proxy-body-size to 10m while the app allows 50 MB; the nginx annotation on
  the web ingress was never updated.
first: users can't upload anything bigger than about 10 megs, they get 413 Request Entity Too Large
~ Why do file uploads over 50 MB fail with a 413?
~ Why do file uploads over 10 MB fail with a 502?
- why do file uploads over 10 MB fail with a 413?
- Why do uploads over 10 MB fail with a 413?
- Why do file uploads over 10MB fail with a 413?
- Why do file uploads larger than 10 MB fail with a 413?
- why do file uploads over 10 mb fail with a 413
- Why do file uploads above 10 MB fail with 413?

## session-logout | Kernel | acme/auth
Q: Why are users logged out after exactly 15 minutes?
A: The refresh-token cookie is set with Path=/api/v2 while the refresh call goes to
  /api/v3/refresh, so the browser never sends it and the 15-minute access token simply expires.
first: people keep getting kicked out of the app, always ~15 min after logging in
~ Why are users logged out after exactly 30 minutes?
~ Why are admins logged out after exactly 15 minutes?
- why are users logged out after exactly 15 minutes?
- Why are users getting logged out after exactly 15 minutes?
- Why do users get logged out after exactly 15 minutes?
- why are users logged out after exactly fifteen minutes?
- After exactly 15 minutes, why are users logged out?
- What logs users out after exactly 15 minutes?

## csv-export-encoding | Wren | acme/web
Q: Why do CSV exports show garbled characters in Excel?
A: The export is UTF-8 without a byte order mark, and Excel on Windows assumes Windows-1252 for
  CSV; writing a BOM (utf-8-sig) fixes accented names.
first: finance says the CSV export turns "José" into "JosÃ©" when they open it
~ Why do XLSX exports show garbled characters in Excel?
~ Why do CSV exports show garbled characters in Google Sheets?
- why do CSV exports show garbled characters in excel?
- Why do the CSV exports show garbled characters in Excel?
- Why do CSV exports show garbled characters when opened in Excel?
- why do csv exports show garbled chars in excel
- In Excel, why do CSV exports show garbled characters?
- Why does Excel show garbled characters in CSV exports?

## push-notifications-android | Scout | acme/mobile
Q: Why are push notifications not delivered on Android 14?
A: Android 13 and later require the POST_NOTIFICATIONS runtime permission; the app targets SDK
  34 but never asks for it, so notifications are silently dropped.
first: android 14 users aren't getting any push notifications, iOS is fine
~ Why are push notifications not delivered on Android 13?
~ Why are push notifications not delivered on iOS 17?
- why are push notifications not delivered on android 14?
- Why aren't push notifications delivered on Android 14?
- Why are push notifications not being delivered on Android 14?
- On Android 14, why are push notifications not delivered?
- why are push notifications not delivered on Android 14
- Why do push notifications not get delivered on Android 14?

## race-order-status | Kernel | acme/api
Q: Why do some orders stay in "pending" after payment succeeds?
A: The payment webhook and the order-confirmation job update the same row without a lock; when
  the webhook lands first, the job overwrites "paid" with its stale "pending" copy.
first: we have ~40 orders a day that are paid in Stripe but show pending in our admin
- why do some orders stay in "pending" after payment succeeds?
- Why do some orders stay pending after payment succeeds?
- Why do some orders stay in pending after the payment succeeds?
- why do some orders stay in "pending" after payment succeeds
- Why do certain orders stay in "pending" after payment succeeds?
- How come some orders stay in "pending" after payment succeeds?

## owner-payments-module | Scout | acme/billing
Q: Who owns the payments module in acme/billing?
A: The Payments team (lead: Dana Okafor); CODEOWNERS lists @acme/payments for billing/payments/,
  and on-call goes through the payments-oncall rotation.
first: I need a review on a change in billing/payments, who should I ask?
~ Who owns the refunds module in acme/billing?
~ Who owns the payments module in acme/api?
- who owns the payments module in acme/billing?
- Who owns the payments module in acme/billing
- Which team owns the payments module in acme/billing?
- Who is the owner of the payments module in acme/billing?
- In acme/billing, who owns the payments module?
- who owns acme/billing's payments module?

## deprecated-endpoint-usage | Kernel | acme/api
Q: Which clients still call the deprecated /v1/orders endpoint?
A: Three: the iOS app 4.x (about 2% of traffic), the Zapier integration, and the nightly finance
  export script; everything else moved to /v2/orders.
first: can we delete /v1/orders yet? who is still hitting it?
~ Which clients still call the deprecated /v1/invoices endpoint?
~ Which clients still call the /v2/orders endpoint?
- which clients still call the deprecated /v1/orders endpoint?
- What clients still call the deprecated /v1/orders endpoint?
- Which clients are still calling the deprecated /v1/orders endpoint?
- Which clients still call the deprecated /v1/orders endpoint
- Which clients still use the deprecated /v1/orders endpoint?
- which clients still hit the deprecated /v1/orders endpoint?

## dependency-cve | Scout | acme/api
Q: Is acme/api affected by the urllib3 CVE-2024-37891?
A: No: acme/api pins urllib3 2.2.2, which contains the fix, and no proxy is used with
  Proxy-Authorization headers.
first: security channel is asking every team about CVE-2024-37891 in urllib3, are we exposed?
~ Is acme/web affected by the urllib3 CVE-2024-37891?
~ Is acme/api affected by the requests CVE-2024-35195?
- is acme/api affected by the urllib3 CVE-2024-37891?
- Is acme/api affected by urllib3 CVE-2024-37891?
- Is acme/api affected by the urllib3 cve-2024-37891?
- Is acme/api impacted by the urllib3 CVE-2024-37891?
- Does the urllib3 CVE-2024-37891 affect acme/api?
- is acme/api affected by the urllib3 CVE-2024-37891

## python-upgrade | Kernel | acme/api
Q: Does the acme/api test suite pass on Python 3.12?
A: All but 4 tests pass; they rely on datetime.utcnow() deprecation warnings being silent, and
  pytest's -W error turns them into failures.
first: we want to move acme/api to python 3.12, does anything break?
~ Does the acme/api test suite pass on Python 3.13?
~ Does the acme/web test suite pass on Python 3.12?
- does the acme/api test suite pass on Python 3.12?
- Does the acme/api test suite pass on python 3.12?
- Does acme/api's test suite pass on Python 3.12?
- Does the test suite of acme/api pass on Python 3.12?
- On Python 3.12, does the acme/api test suite pass?
- does the acme/api test suite pass on py 3.12

## dead-code | Pico | acme/web
Q: Is the legacy reports page still used?
A: Barely: 11 visits in the last 90 days, all from two internal accounts; the route can be removed
  after telling the finance team.
first: can I delete pages/legacy-reports? does anyone still use it?
~ Is the legacy billing page still used?
~ Is the new reports page still used?
- is the legacy reports page still used?
- Is the legacy reports page still being used?
- Is anyone still using the legacy reports page?
- is the legacy reports page still used
- Is the old legacy reports page still used?
- Does anyone still use the legacy reports page?

## license-check | Scout | acme/web
Q: Are there any GPL-licensed dependencies in acme/web?
A: One: the transitive dependency "node-forge-fork" is GPL-3.0, pulled in by an unused PDF
  plugin; removing the plugin removes it.
first: legal needs to know if the web app ships anything GPL before the enterprise deal
~ Are there any GPL-licensed dependencies in acme/mobile?
~ Are there any AGPL-licensed dependencies in acme/web?
- are there any GPL-licensed dependencies in acme/web?
- Are there any GPL licensed dependencies in acme/web?
- Does acme/web have any GPL-licensed dependencies?
- Are there GPL-licensed dependencies in acme/web?
- Any GPL-licensed dependencies in acme/web?
- are there any gpl-licensed dependencies in acme/web

## monorepo-build-graph | Atlas | acme/platform
Q: Which packages rebuild when shared/utils changes?
A: 14 of 22 packages: every service that imports shared/utils directly, plus the web app through
  shared/ui; the build graph is in tools/graph.json.
first: if I touch shared/utils, how much of the monorepo rebuilds?
~ Which packages rebuild when shared/ui changes?
~ Which packages do not rebuild when shared/utils changes?
- which packages rebuild when shared/utils changes?
- What packages rebuild when shared/utils changes?
- Which packages get rebuilt when shared/utils changes?
- When shared/utils changes, which packages rebuild?
- which packages rebuild when shared/utils is changed
- Which packages are rebuilt when shared/utils changes?

## migration-order | Kernel | acme/billing
Q: Can migrations 0042 and 0043 in acme/billing run in either order?
A: No: 0043 adds a foreign key to the currency table that 0042 creates, so 0042 must run first.
first: I want to split the release, can 0043 go out before 0042?
~ Can migrations 0043 and 0044 in acme/billing run in either order?
- can migrations 0042 and 0043 in acme/billing run in either order?
- Can migrations 0042 and 0043 in acme/billing be run in either order?
- Can the acme/billing migrations 0042 and 0043 run in either order?
- In acme/billing, can migrations 0042 and 0043 run in either order?
- Can migrations 0042 and 0043 in acme/billing run in any order?
- can migrations 42 and 43 in acme/billing run in either order?

## api-breaking-change | Scout | acme/api
Q: Did the 2.4.0 release of acme/api break backwards compatibility?
A: Yes, in one place: the "amount" field in order responses changed from a string to an integer
  number of cents; everything else is additive.
first: a partner says their integration broke after our 2.4.0 release, did we change something?
~ Did the 2.5.0 release of acme/api break backwards compatibility?
~ Did the 2.4.0 release of acme/web break backwards compatibility?
- did the 2.4.0 release of acme/api break backwards compatibility?
- Did the acme/api 2.4.0 release break backwards compatibility?
- Did acme/api 2.4.0 break backwards compatibility?
- Did the 2.4.0 release of acme/api break backward compatibility?
- Did the 2.4.0 release of acme/api break backwards compat?
- did the 2.4.0 release of acme/api break backwards compatibility

## ios-crash | Kernel | acme/mobile
Q: What causes the iOS app to crash on launch for iPad users?
A: The launch screen storyboard forces portrait-only constraints; on iPad in landscape split view,
  Auto Layout throws an unsatisfiable-constraints exception during the first layout pass.
first: crashlytics has a spike of launch crashes, all iPads as far as I can tell
other: A third-party analytics SDK (4.2.0) calls a UIKit API from a background thread on
  iPadOS 17; pinning it to 4.1.3 stops the crash.
~ What causes the iOS app to crash on launch for iPhone users?
~ What causes the Android app to crash on launch for tablet users?
- what causes the iOS app to crash on launch for iPad users?
- What's causing the iOS app to crash on launch for iPad users?
- What causes the iOS app to crash at launch for iPad users?
- For iPad users, what causes the iOS app to crash on launch?
- what causes the ios app to crash on launch for ipad users
- What makes the iOS app crash on launch for iPad users?

## dark-mode-contrast | Wren | acme/web
Q: Which pages fail the contrast check in dark mode?
A: Settings, Billing history and the onboarding checklist: they use the gray-500 text token on
  gray-800, a 3.1:1 ratio against the required 4.5:1.
first: accessibility audit flagged contrast issues in dark mode, which screens?
~ Which pages fail the contrast check in light mode?
~ Which pages pass the contrast check in dark mode?
- which pages fail the contrast check in dark mode?
- What pages fail the contrast check in dark mode?
- In dark mode, which pages fail the contrast check?
- Which pages are failing the contrast check in dark mode?
- which pages fail the contrast check in dark mode
- Which pages fail the dark mode contrast check?

## app-store-rejection | Scout | acme/mobile
Q: Why was the 5.2 iOS build rejected by App Review?
A: Guideline 5.1.1: the app asks for contact access at launch without a purpose string saying
  why; the permission is only needed for the invite feature.
first: apple rejected 5.2, the message is vague, what do they want?
~ Why was the 5.3 iOS build rejected by App Review?
~ Why was the 5.2 Android build rejected by Play review?
- why was the 5.2 iOS build rejected by App Review?
- Why did App Review reject the 5.2 iOS build?
- Why was the iOS 5.2 build rejected by App Review?
- Why was the 5.2 iOS build rejected by app review?
- Why was the 5.2 iOS build rejected by Apple's App Review?
- why was the 5.2 ios build rejected by app review

## web-vitals-lcp | Pico | acme/web
Q: Why is the LCP on the pricing page over 4 seconds?
A: The hero image is a 2.8 MB PNG loaded by client-side JavaScript after hydration; serving it as
  a preloaded 180 KB WebP brings LCP to 1.9 s.
first: lighthouse gives the pricing page a terrible LCP, like 4.3s on mobile
other: A cookie-consent banner renders above the hero and becomes the LCP element after a
  3-second script delay.
~ Why is the LCP on the home page over 4 seconds?
~ Why is the LCP on the pricing page over 2 seconds?
- why is the LCP on the pricing page over 4 seconds?
- Why is the pricing page's LCP over 4 seconds?
- Why is LCP on the pricing page over 4 seconds?
- Why is the LCP on the pricing page above 4 seconds?
- why is the lcp on the pricing page over 4 seconds
- Why's the LCP on the pricing page over 4s?

## flaky-quarantine | Pico | acme/platform
Q: How many tests are currently quarantined as flaky?
A: 37 tests in 9 packages; 12 of them have been quarantined for more than 90 days and nobody
  owns them.
first: how big is our flaky test quarantine list these days?
~ How many tests are currently skipped as flaky?
~ How many tests were quarantined as flaky last year?
- how many tests are currently quarantined as flaky?
- How many tests are quarantined as flaky right now?
- How many tests are currently quarantined as flaky
- Currently, how many tests are quarantined as flaky?
- How many tests are currently in quarantine as flaky?
- how many tests r currently quarantined as flaky?

## merge-queue-wait | Atlas | acme/platform
Q: Why do pull requests wait over an hour in the merge queue?
A: The queue runs the full 45-minute suite for each PR serially, and one run in five fails on a
  flaky test and requeues; batching 4 PRs per run cuts the median wait to 18 minutes.
first: my PR sat in the merge queue for 80 minutes, is that normal?
other: Only 2 runners carry the merge-queue label, so PRs wait for a runner, not for tests.
~ Why do pull requests wait over two hours in the merge queue?
- why do pull requests wait over an hour in the merge queue?
- Why do PRs wait over an hour in the merge queue?
- Why do pull requests wait more than an hour in the merge queue?
- Why do pull requests wait over an hour in the merge queue
- In the merge queue, why do pull requests wait over an hour?
- why do pull requests wait for over an hour in the merge queue?

## renovate-noise | Wren | acme/platform
Q: How many Renovate pull requests were opened last week?
A: 126 across 22 repositories; 81 were patch updates that could be grouped, and 19 are still open
  because their CI failed.
first: renovate is drowning us, how many PRs did it open last week?
~ How many Renovate pull requests were opened last month?
~ How many Renovate pull requests were merged last week?
- how many Renovate pull requests were opened last week?
- How many Renovate PRs were opened last week?
- How many renovate pull requests were opened last week?
- Last week, how many Renovate pull requests were opened?
- How many Renovate pull requests got opened last week?
- how many renovate pull requests were opened last week

## codeowners-gap | Scout | acme/platform
Q: Which directories have no CODEOWNERS entry?
A: services/notifications/, tools/scripts/ and infra/terraform/modules/legacy/; together they got
  58 commits last quarter without a required reviewer.
first: some PRs merge without any required reviewer, which folders aren't covered by codeowners?
- which directories have no CODEOWNERS entry?
- Which directories don't have a CODEOWNERS entry?
- What directories have no CODEOWNERS entry?
- Which directories have no entry in CODEOWNERS?
- which directories have no codeowners entry
- Which folders have no CODEOWNERS entry?

## test-runtime | Kernel | acme/api
Q: Which tests take the most time in the acme/api suite?
A: test_reports_export (94 s), test_bulk_import (61 s) and the Stripe webhook replay tests (48 s
  together); they account for 40% of the suite's 11 minutes.
first: the api test suite takes 11 minutes, which tests are the slow ones?
~ Which tests take the most time in the acme/web suite?
~ Which tests take the least time in the acme/api suite?
- which tests take the most time in the acme/api suite?
- Which tests take the most time in the acme/api test suite?
- What tests take the most time in the acme/api suite?
- In the acme/api suite, which tests take the most time?
- which tests take the most time in the acme/api suite
- Which tests take up the most time in the acme/api suite?

## kernel-webhook-retries | Kernel | acme/api
Q: What did Kernel find about the webhook retries?
A: Webhooks are retried 5 times with a fixed 10-second delay, so a receiver that is down for a
  minute loses the event; exponential backoff up to 6 hours is proposed in ADR-019.
first: Kernel, can you look at how our webhook retries behave when a customer's endpoint is down?
- what did Kernel find about the webhook retries?
- What did Kernel find about webhook retries?
- What did kernel find out about the webhook retries?
- What did Kernel discover about the webhook retries?
- About the webhook retries, what did Kernel find?
- what did kernel find about the webhook retrys

## wren-i18n-missing | Wren | acme/web
Q: Which strings are missing German translations?
A: 212 strings, almost all from the new billing settings and the onboarding checklist; the
  extraction script skips files under app/(settings).
first: German customers see English text in billing settings, what's untranslated?
~ Which strings are missing French translations?
- which strings are missing German translations?
- What strings are missing German translations?
- Which strings are missing their German translations?
- Which strings are missing German translation?
- Which strings don't have German translations?
- which strings are missing german translations

## kernel-n-plus-one-graphql | Kernel | acme/api
Q: Why does the GraphQL orders query make hundreds of database calls?
A: Each order's customer and line items are resolved separately (N+1) and there is no DataLoader
  for customers; adding DataLoaders drops a 50-order page from 151 queries to 3.
first: one graphql request for 50 orders made 151 sql queries according to the tracing
- why does the GraphQL orders query make hundreds of database calls?
- Why does the graphql orders query make hundreds of DB calls?
- Why does the GraphQL orders query make hundreds of database queries?
- Why is the GraphQL orders query making hundreds of database calls?
- why does the GraphQL orders query make hundreds of database calls
- How come the GraphQL orders query makes hundreds of database calls?

## wren-form-validation | Wren | acme/web
Q: Why does the signup form accept emails without a domain?
A: The client-side check is the HTML input type=email, which accepts "user@localhost"-style
  addresses, and the server only checks for an "@"; about 300 accounts have such emails.
first: we have users with emails like "bob@gmail" with no .com, how did they sign up?
- why does the signup form accept emails without a domain?
- Why does the sign-up form accept emails without a domain?
- Why does the signup form accept email addresses without a domain?
- Why is the signup form accepting emails without a domain?
- why does the signup form accept emails without a domain
- How come the signup form accepts emails without a domain?

## kernel-float-money | Kernel | acme/billing
Q: Why are some invoice totals off by one cent?
A: Line items are summed as floats and rounded once at the end, while the PDF rounds each line;
  for invoices with many discounted lines the two disagree by a cent. Decimal with per-line
  rounding fixes it.
first: a customer's invoice says 120.47 in the email and 120.48 in the PDF
other: Currency conversion uses yesterday's rate for the email and today's for the PDF.
- why are some invoice totals off by one cent?
- Why are some invoice totals off by a cent?
- Why are some invoice totals off by 1 cent?
- Why are some of the invoice totals off by one cent?
- why are some invoice totals off by one cent
- How come some invoice totals are off by one cent?

## scout-search-ranking | Scout | acme/search
Q: Why do archived products rank above active ones in search?
A: Ranking boosts documents by total review count, and archived products keep their historic
  reviews; the "archived" flag is indexed but never used as a filter.
first: customers searching for "blender" see a discontinued model first
- why do archived products rank above active ones in search?
- Why do archived products rank higher than active ones in search?
- In search, why do archived products rank above active ones?
- Why do archived products rank above active products in search?
- why do archived products rank above active ones in search
- Why are archived products ranked above active ones in search?

## wren-storybook-broken | Wren | acme/web
Q: Why does Storybook fail to build after the React 18 upgrade?
A: The Storybook preset still uses the React 17 render API through @storybook/react 6.4;
  upgrading Storybook to 7.6 fixes the build.
first: storybook has been broken since we bumped react, "ReactDOM.render is no longer supported"
~ Why does Storybook fail to build after the React 19 upgrade?
- why does Storybook fail to build after the React 18 upgrade?
- Why does storybook fail to build after the React 18 upgrade?
- Why does Storybook fail to build since the React 18 upgrade?
- Why does Storybook not build after the React 18 upgrade?
- After the React 18 upgrade, why does Storybook fail to build?
- why does storybook fail to build after the react 18 upgrade

## pico-slow-ci-cache | Pico | acme/mobile
Q: Why does the acme/mobile CI download all Gradle dependencies on every run?
A: The cache key hashes every *.gradle file, including one generated with a timestamp, so the
  key changes each run; excluding build/generated from the hash restores cache hits.
first: mobile CI spends 6 minutes downloading gradle deps every single time
- why does the acme/mobile CI download all Gradle dependencies on every run?
- Why does acme/mobile CI download all the Gradle dependencies on every run?
- Why does the acme/mobile CI download all Gradle deps on every run?
- Why does the acme/mobile CI download all Gradle dependencies on each run?
- why does the acme/mobile ci download all gradle dependencies on every run
- On every run, why does the acme/mobile CI download all Gradle dependencies?

## kernel-cron-double-run | Kernel | acme/billing
Q: Why does the invoice cron job run twice on the first of the month?
A: Two scheduler replicas run without leader election since the Helm values were split per
  region, and each sends the same batch; enabling the lease lock fixes it.
first: invoices get generated twice on the 1st, looks like the cron fires twice
~ Why does the invoice cron job run twice on the last day of the month?
~ Why does the reminder cron job run twice on the first of the month?
- why does the invoice cron job run twice on the first of the month?
- Why does the invoice cron run twice on the first of the month?
- Why does the invoice cron job run twice on the 1st of the month?
- On the first of the month, why does the invoice cron job run twice?
- Why is the invoice cron job running twice on the first of the month?
- why does the invoice cron job run two times on the first of the month?

## scout-sdk-adoption | Scout | acme/sdk
Q: How many customers use the Python SDK versus the JavaScript SDK?
A: In the last 30 days 1,840 API keys sent requests with the Python SDK user agent and 3,120
  with the JavaScript SDK; 610 used both.
first: for roadmap planning, is the python or the JS SDK used more?
- how many customers use the Python SDK versus the JavaScript SDK?
- How many customers use the Python SDK vs the JavaScript SDK?
- How many customers use the Python SDK versus the JS SDK?
- How many customers use the Python SDK compared to the JavaScript SDK?
- how many customers use the python sdk versus the javascript sdk
- How many customers are using the Python SDK versus the JavaScript SDK?
"""
