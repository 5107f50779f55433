"""The SDK's Django glue: its settings (`conf`), one shared client per process (`shared`) and
its system checks (`checks`). The mint route's app config loads the checks, so a site with
`"mintroute"` in INSTALLED_APPS gets them; a site using the SDK without the mint route can add
`"sportsproxy.django"` instead.

It never imports the embedded sandbox: the sandbox's AppConfig.ready registers its in-process
transport here (`conf.register_transport("sandbox", ...)`), used when SPORTS_TRANSPORT is "sandbox".
"""
