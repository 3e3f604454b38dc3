namespace Hyder.Hosting.Windows;

/// <summary>The states a service reports to the Service Control Manager (<c>SERVICE_STATUS.dwCurrentState</c>).</summary>
public enum ServiceState : uint
{
    /// <summary>Not reported yet: the SCM has not called the service's main function.</summary>
    NotStarted = 0,

    /// <summary><c>SERVICE_STOPPED</c>: the last report; the process exits after it.</summary>
    Stopped = 1,

    /// <summary><c>SERVICE_START_PENDING</c>: the host is starting; checkpoints say it makes progress.</summary>
    StartPending = 2,

    /// <summary><c>SERVICE_STOP_PENDING</c>: the host is stopping gracefully.</summary>
    StopPending = 3,

    /// <summary><c>SERVICE_RUNNING</c>: every hosted service has started.</summary>
    Running = 4,
}

/// <summary>The control codes a handler receives (<c>SERVICE_CONTROL_*</c>) that the host knows.</summary>
public enum ServiceControlCode : uint
{
    /// <summary><c>SERVICE_CONTROL_STOP</c>: <c>sc stop</c>, <c>Stop-Service</c>.</summary>
    Stop = 0x1,

    /// <summary><c>SERVICE_CONTROL_PAUSE</c>: not accepted.</summary>
    Pause = 0x2,

    /// <summary><c>SERVICE_CONTROL_CONTINUE</c>: not accepted.</summary>
    Continue = 0x3,

    /// <summary><c>SERVICE_CONTROL_INTERROGATE</c>: report the current status again.</summary>
    Interrogate = 0x4,

    /// <summary><c>SERVICE_CONTROL_SHUTDOWN</c>: the machine shuts down (only when preshutdown was not taken).</summary>
    Shutdown = 0x5,

    /// <summary><c>SERVICE_CONTROL_PRESHUTDOWN</c>: the machine is about to shut down; allows a longer graceful stop than shutdown.</summary>
    Preshutdown = 0xF,
}

/// <summary>The controls a service accepts (<c>SERVICE_ACCEPT_*</c>), in <see cref="ServiceStatusReport.ControlsAccepted"/>.</summary>
[Flags]
public enum ServiceAcceptedControls : uint
{
    /// <summary>Nothing: the pending states and stopped.</summary>
    None = 0,

    /// <summary><c>SERVICE_ACCEPT_STOP</c>.</summary>
    Stop = 0x1,

    /// <summary><c>SERVICE_ACCEPT_SHUTDOWN</c>.</summary>
    Shutdown = 0x4,

    /// <summary><c>SERVICE_ACCEPT_PRESHUTDOWN</c>.</summary>
    Preshutdown = 0x100,
}

/// <summary>
/// One <c>SERVICE_STATUS</c> report, without the service type (always <c>SERVICE_WIN32_OWN_PROCESS</c>).
/// </summary>
/// <param name="State">The state reported.</param>
/// <param name="ControlsAccepted">Controls the handler takes in this state.</param>
/// <param name="Win32ExitCode">0, or <see cref="Win32Codes.ServiceSpecificError"/> when <paramref name="ServiceSpecificExitCode"/> holds the host's exit code.</param>
/// <param name="ServiceSpecificExitCode">The host's non-zero exit code, when it failed.</param>
/// <param name="CheckPoint">Grows during a pending state so the SCM sees progress; 0 otherwise.</param>
/// <param name="WaitHint">How long the SCM should wait for the next report in a pending state; zero otherwise.</param>
public readonly record struct ServiceStatusReport(
    ServiceState State,
    ServiceAcceptedControls ControlsAccepted,
    uint Win32ExitCode,
    uint ServiceSpecificExitCode,
    uint CheckPoint,
    TimeSpan WaitHint);

/// <summary>The Win32 codes the service protocol uses.</summary>
public static class Win32Codes
{
    /// <summary><c>NO_ERROR</c>: a control was handled.</summary>
    public const uint NoError = 0;

    /// <summary><c>ERROR_CALL_NOT_IMPLEMENTED</c>: a control the handler does not know.</summary>
    public const uint CallNotImplemented = 120;

    /// <summary><c>ERROR_SERVICE_CANNOT_ACCEPT_CTRL</c>: a known control the current state does not accept.</summary>
    public const uint ServiceCannotAcceptControl = 1061;

    /// <summary><c>ERROR_FAILED_SERVICE_CONTROLLER_CONNECT</c>: the process was not started by the SCM.</summary>
    public const uint FailedServiceControllerConnect = 1063;

    /// <summary><c>ERROR_SERVICE_SPECIFIC_ERROR</c>: the exit code is in <c>dwServiceSpecificExitCode</c>.</summary>
    public const uint ServiceSpecificError = 1066;
}
