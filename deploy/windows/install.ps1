<#
.SYNOPSIS
Installs Hyder as Windows services: the builds in Program Files, configuration and data in
ProgramData, one service per role with a virtual service account, recovery actions, an event
source, and data directories only the service account, SYSTEM and Administrators can open.

.DESCRIPTION
Run from an elevated PowerShell (5.1 or 7). Every change is printed before it is made; -DryRun
prints them and changes nothing. A second run upgrades in place: it stops the services, replaces
the builds, updates each service's command line and starts them again, and keeps every
configuration file that exists (an edited file is never overwritten). See README.md beside it.

.EXAMPLE
.\install.ps1                                                   # publish from this checkout, install and start hyder-server
.\install.ps1 -Roles projection,sequencer,log-unit,server -LogUnits 1,2
.\install.ps1 -Published C:\drop\hyder                          # a folder holding server\ and log\ as published
.\install.ps1 -DryRun                                           # print every step, change nothing
#>
[CmdletBinding()]
param(
    # A folder with server\ and log\ already published for win-x64; empty: publish from this checkout.
    [string] $Published = '',
    # Where the builds go.
    [string] $InstallDir = (Join-Path $env:ProgramFiles 'Hyder'),
    # Where configuration (*.json), data\<service> and logs\<service> go.
    [string] $ConfigDir = (Join-Path $env:ProgramData 'Hyder'),
    # The roles to install as services.
    [ValidateSet('server', 'projection', 'sequencer', 'log-unit')]
    [string[]] $Roles = @('server'),
    # Names of the log units (one service hyder-log-unit-NAME each) when -Roles has log-unit.
    [string[]] $LogUnits = @('1'),
    # The account the services run as; empty: each its own virtual account NT SERVICE\<service>.
    [string] $Account = '',
    # The account and password, for an account that has a password (a domain or local user).
    [pscredential] $Credential = $null,
    # Where the services log: eventlog (the Application log) or file (logs\<service>\<service>.log).
    [ValidateSet('eventlog', 'file')]
    [string] $LogTarget = 'eventlog',
    # Install but do not start the services.
    [switch] $NoStart,
    # Print what would be done and change nothing.
    [switch] $DryRun
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
$global:LASTEXITCODE = 0
$here = $PSScriptRoot
$repo = Split-Path (Split-Path $here -Parent) -Parent

# The published programs: folder under -InstallDir (and -Published) and the app host in it.
$Programs = @{
    server = @{ Folder = 'server'; Exe = 'hyder-server.exe'; Project = 'src\Hyder.Server.Host\Hyder.Server.Host.csproj' }
    log    = @{ Folder = 'log'; Exe = 'Hyder.Log.Host.exe'; Project = 'src\Hyder.Log.Host\Hyder.Log.Host.csproj' }
}

# The event log's message file (System.Diagnostics.EventLog's), for every event source. hyder-log's
# build carries it; hyder-server's does not (it takes EventLog from the ASP.NET Core shared
# framework, whose folder changes with every runtime update), so every source points at this one.
$EventMessageFile = Join-Path (Join-Path $InstallDir 'log') 'System.Diagnostics.EventLog.Messages.dll'

# SYSTEM and Administrators by SID, so the ACLs do not depend on the language of Windows.
$System = '*S-1-5-18'
$Administrators = '*S-1-5-32-544'

# Every change goes through Invoke-Step: printed always, run unless -DryRun.
function Invoke-Step([string] $Description, [scriptblock] $Action) {
    Write-Host "+ $Description"
    if (-not $DryRun) {
        & $Action
        if ($LASTEXITCODE -and $LASTEXITCODE -ne 0) { throw "failed (exit $LASTEXITCODE): $Description" }
        $global:LASTEXITCODE = 0
    }
}

# The services to install: name, program, configuration file, whether it keeps data, and the role's arguments.
function Get-HyderService {
    foreach ($role in $Roles) {
        switch ($role) {
            'server' { @{ Name = 'hyder-server'; Program = 'server'; Config = 'server.json'; Sample = 'server.sample.json'; Data = $true; Display = 'Hyder transaction server' } }
            'projection' { @{ Name = 'hyder-projection'; Program = 'log'; Config = 'projection.json'; Sample = 'projection.sample.json'; Data = $true; Display = 'Hyder projection store' } }
            'sequencer' { @{ Name = 'hyder-sequencer'; Program = 'log'; Config = 'sequencer.json'; Sample = 'sequencer.sample.json'; Data = $false; Display = 'Hyder sequencer' } }
            'log-unit' {
                foreach ($unit in $LogUnits) {
                    @{ Name = "hyder-log-unit-$unit"; Program = 'log'; Config = "log-unit-$unit.json"; Sample = 'log-unit.sample.json'; Data = $true; Display = "Hyder log unit $unit" }
                }
            }
        }
    }
}

# A service's command line: the app host, --service, where it logs, then its role's options.
# hyder-server reads its JSON file; hyder-log takes only a command line, built here from its JSON file.
function Get-CommandLine($service) {
    $program = $Programs[$service.Program]
    $exe = Join-Path (Join-Path $InstallDir $program.Folder) $program.Exe
    $configFile = Join-Path $ConfigDir $service.Config
    $dataDir = Join-Path (Join-Path $ConfigDir 'data') $service.Name
    $logFile = Join-Path (Join-Path (Join-Path $ConfigDir 'logs') $service.Name) "$($service.Name).log"
    $arguments = @('--service', '--event-source', $service.Name, '--log-target', $LogTarget)
    if ($LogTarget -eq 'file') { $arguments += @('--log-file', $logFile) }
    if ($service.Program -eq 'server') {
        $arguments += @('--config', $configFile)
    } else {
        # Before its first install the file does not exist yet (a dry run): the sample says the same.
        $source = $configFile
        if (-not (Test-Path $configFile)) { $source = Join-Path $here $service.Sample }
        $settings = Get-Content -Raw $source | ConvertFrom-Json
        switch -Wildcard ($service.Name) {
            'hyder-projection' { $arguments += @('--role', 'projection', '--data', $dataDir) }
            'hyder-sequencer' { $arguments += @('--role', 'sequencer', '--projection-store', $settings.ProjectionStore) }
            'hyder-log-unit-*' { $arguments += @('--role', 'unit', '--data', $dataDir) }
        }
        $arguments += @('--listen', $settings.Listen, '--port', [string]$settings.Port)
        if ($settings.PSObject.Properties['Options']) { $arguments += @($settings.Options) }
    }
    $quoted = $arguments | ForEach-Object { if ($_ -match '[\s"]') { '"' + ($_ -replace '"', '\"') + '"' } else { $_ } }
    return "`"$exe`" " + ($quoted -join ' ')
}

function Get-ServiceAccount($service) {
    if ($Credential) { return $Credential.UserName }
    if ($Account) { return $Account }
    return "NT SERVICE\$($service.Name)"
}

$services = @(Get-HyderService)
if ($services.Count -eq 0) { throw 'No roles to install (-Roles).' }

# 1. Stop what runs, so that the builds can be replaced.
foreach ($service in $services) {
    if (Get-Service -Name $service.Name -ErrorAction SilentlyContinue) {
        Invoke-Step "Stop-Service $($service.Name)" { Stop-Service -Name $service.Name -Force }
    }
}

# 2. The builds: framework-dependent win-x64 (the machine needs the .NET and ASP.NET Core runtimes).
foreach ($program in $Programs.Values) {
    $target = Join-Path $InstallDir $program.Folder
    if ($Published) {
        $source = Join-Path $Published $program.Folder
        if (-not (Test-Path (Join-Path $source $program.Exe))) { throw "$source does not hold $($program.Exe): publish with -r win-x64 first." }
        Invoke-Step "copy $source to $target" {
            New-Item -ItemType Directory -Force -Path $target | Out-Null
            Copy-Item -Path (Join-Path $source '*') -Destination $target -Recurse -Force
        }
    } else {
        Invoke-Step "dotnet publish $($program.Project) -c Release -r win-x64 --self-contained false -o $target" {
            dotnet publish (Join-Path $repo $program.Project) -c Release -r win-x64 --self-contained false -o $target
        }
    }
}
Invoke-Step "copy README.md and the samples to $InstallDir\share" {
    New-Item -ItemType Directory -Force -Path (Join-Path $InstallDir 'share\samples') | Out-Null
    Copy-Item -Path (Join-Path $here 'README.md') -Destination (Join-Path $InstallDir 'share') -Force
    Copy-Item -Path (Join-Path $here '*.sample.json') -Destination (Join-Path $InstallDir 'share\samples') -Force
}

# 3. Each service: configuration, the service, its account, recovery, event source, then the ACLs
#    (a virtual account exists only once its service does).
foreach ($service in $services) {
    $name = $service.Name
    $account = Get-ServiceAccount $service
    $configFile = Join-Path $ConfigDir $service.Config
    $dataDir = Join-Path (Join-Path $ConfigDir 'data') $name
    $logDir = Join-Path (Join-Path $ConfigDir 'logs') $name

    if (Test-Path $configFile) {
        Write-Host "  keeping $configFile"
    } else {
        Invoke-Step "write $configFile from $($service.Sample)" {
            New-Item -ItemType Directory -Force -Path $ConfigDir | Out-Null
            $settings = Get-Content -Raw (Join-Path $here $service.Sample) | ConvertFrom-Json
            if ($service.Program -eq 'server' -and $settings.Log.Embedded) { $settings.Log.Data = $dataDir }
            $settings | ConvertTo-Json -Depth 8 | Set-Content -Path $configFile -Encoding utf8
        }
    }

    $commandLine = Get-CommandLine $service
    if (Get-Service -Name $name -ErrorAction SilentlyContinue) {
        # The registry value itself: passing a quoted path through sc.exe depends on the PowerShell version.
        Invoke-Step "set the command line of $name (ImagePath) to $commandLine" {
            Set-ItemProperty -Path "HKLM:\SYSTEM\CurrentControlSet\Services\$name" -Name ImagePath -Value $commandLine
        }
    } else {
        $new = @{ Name = $name; BinaryPathName = $commandLine; DisplayName = $service.Display; StartupType = 'Automatic'; Description = "Hyder: $($service.Display) ($name). See $InstallDir\share\README.md." }
        if ($Credential) { $new.Credential = $Credential }
        Invoke-Step "New-Service -Name $name -BinaryPathName $commandLine" { New-Service @new | Out-Null }
    }
    if (-not $Credential) {
        # A virtual account (NT SERVICE\name) or a built-in one has no password.
        Invoke-Step "sc.exe config $name obj= $account" { sc.exe config $name obj= $account | Out-Null }
    }
    Invoke-Step "sc.exe sidtype $name unrestricted" { sc.exe sidtype $name unrestricted | Out-Null }
    # Recovery: restart after 5 s, 10 s, then 60 s; the count resets after a day without failure.
    # failureflag 1: a stop with a non-zero exit code (the host reports it as a service-specific
    # error) counts as a failure too, not only a crash.
    Invoke-Step "sc.exe failure $name reset= 86400 actions= restart/5000/restart/10000/restart/60000" {
        sc.exe failure $name reset= 86400 actions= restart/5000/restart/10000/restart/60000 | Out-Null
    }
    Invoke-Step "sc.exe failureflag $name 1" { sc.exe failureflag $name 1 | Out-Null }

    $eventSource = "HKLM:\SYSTEM\CurrentControlSet\Services\EventLog\Application\$name"
    Invoke-Step "event source $name in the Application log ($EventMessageFile)" {
        New-Item -Path $eventSource -Force | Out-Null
        New-ItemProperty -Path $eventSource -Name EventMessageFile -PropertyType ExpandString -Value $EventMessageFile -Force | Out-Null
    }

    # Data and log directories: the service account, SYSTEM and Administrators only, nothing inherited.
    $directories = @($logDir)
    if ($service.Data) { $directories += $dataDir }
    foreach ($directory in $directories) {
        Invoke-Step "New-Item $directory; icacls $directory /inheritance:r /grant:r $account, SYSTEM, Administrators" {
            New-Item -ItemType Directory -Force -Path $directory | Out-Null
            icacls $directory /inheritance:r /grant:r "${account}:(OI)(CI)M" "${System}:(OI)(CI)F" "${Administrators}:(OI)(CI)F" | Out-Null
        }
    }
    # The configuration may hold a TLS password: the service account reads it, nobody else but admins.
    Invoke-Step "icacls $configFile /inheritance:r /grant:r ${account}:R, SYSTEM, Administrators" {
        icacls $configFile /inheritance:r /grant:r "${account}:R" "${System}:F" "${Administrators}:F" | Out-Null
    }
}

# 4. Start, in the order given (log roles before the server when -Roles lists them first).
if (-not $NoStart) {
    foreach ($service in $services) {
        Invoke-Step "Start-Service $($service.Name)" { Start-Service -Name $service.Name }
    }
}
Write-Host "Installed: $(($services | ForEach-Object { $_.Name }) -join ', '). Logs: $(if ($LogTarget -eq 'file') { "$ConfigDir\logs" } else { 'Event Viewer, Windows Logs > Application' })."
