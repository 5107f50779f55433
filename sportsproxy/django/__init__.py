"""The SDK's Django glue: its settings (`conf`), one shared client per process (`shared`) and
its system checks (`checks`). The mint route's app config loads the checks, so a site with
`"mintroute"` in INSTALLED_APPS gets them; a site using the SDK without the mint route can add
`"sportsproxy.django"` instead.

It reaches the embedded sandbox only when SPORTS_TRANSPORT is "sandbox", and then only by
importing it at that moment: nothing here imports `sportsproxy.sandbox` at module level.
"""
