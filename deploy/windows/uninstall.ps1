<#
.SYNOPSIS
Removes what install.ps1 installed: stops and deletes the hyder-* services, their event sources,
and the builds in Program Files. Keeps the configuration, data and logs in ProgramData unless
-RemoveData is given.

.EXAMPLE
.\uninstall.ps1                 # keep C:\ProgramData\Hyder (configuration, data, logs)
.\uninstall.ps1 -RemoveData     # delete it too
.\uninstall.ps1 -DryRun         # print every step, change nothing
#>
[CmdletBinding()]
param(
    # Where install.ps1 put the builds.
    [string] $InstallDir = (Join-Path $env:ProgramFiles 'Hyder'),
    # Where install.ps1 put configuration, data and logs.
    [string] $ConfigDir = (Join-Path $env:ProgramData 'Hyder'),
    # Delete -ConfigDir as well: every configuration file, the data of every role and the logs.
    [switch] $RemoveData,
    # Print what would be done and change nothing.
    [switch] $DryRun
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
$global:LASTEXITCODE = 0

function Invoke-Step([string] $Description, [scriptblock] $Action) {
    Write-Host "+ $Description"
    if (-not $DryRun) {
        & $Action
        if ($LASTEXITCODE -and $LASTEXITCODE -ne 0) { throw "failed (exit $LASTEXITCODE): $Description" }
        $global:LASTEXITCODE = 0
    }
}

# Every service install.ps1 may have created is named hyder-*.
$services = @(Get-Service -Name 'hyder-*' -ErrorAction SilentlyContinue)
foreach ($service in $services) {
    $name = $service.Name
    if ($service.Status -ne 'Stopped') {
        Invoke-Step "Stop-Service $name" { Stop-Service -Name $name -Force }
    }
    Invoke-Step "sc.exe delete $name" { sc.exe delete $name | Out-Null }
    $eventSource = "HKLM:\SYSTEM\CurrentControlSet\Services\EventLog\Application\$name"
    if (Test-Path $eventSource) {
        Invoke-Step "remove the event source $name" { Remove-Item -Path $eventSource -Recurse -Force }
    }
}

if (Test-Path $InstallDir) {
    Invoke-Step "Remove-Item $InstallDir" { Remove-Item -Path $InstallDir -Recurse -Force }
}

if ($RemoveData) {
    if (Test-Path $ConfigDir) {
        Invoke-Step "Remove-Item $ConfigDir (configuration, data, logs)" { Remove-Item -Path $ConfigDir -Recurse -Force }
    }
} else {
    Write-Host "  keeping $ConfigDir (configuration, data, logs); -RemoveData deletes it"
}
