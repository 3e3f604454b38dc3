namespace Hyder.Hosting.Windows;

/// <summary>
/// What a service reports to the SCM, and when, as a pure managed state machine:
/// <list type="bullet">
/// <item><see cref="Starting"/>: <see cref="ServiceState.StartPending"/>, checkpoint 1, no controls accepted.</item>
/// <item><see cref="Tick"/>: in a pending state the checkpoint grows by one (the SCM sees progress within the
/// wait hint), up to a limit per state: a start or stop that hangs stops showing progress, and the SCM's
/// own timeout then applies (as systemd's <c>TimeoutStartSec=</c> and <c>TimeoutStopSec=</c> do).</item>
/// <item><see cref="Started"/>: <see cref="ServiceState.Running"/>, accepting stop, shutdown and preshutdown.</item>
/// <item><see cref="OnControl"/>: stop, shutdown and preshutdown while running move to
/// <see cref="ServiceState.StopPending"/> and ask the host to stop; a second stop is ignored; interrogate
/// reports the status again; a control the state does not accept is refused.</item>
/// <item><see cref="StopRequested"/>: the host stops on its own (a failure, Ctrl-C): stop-pending as well.</item>
/// <item><see cref="Stopped"/>: the last report, with the host's exit code when it is not 0.</item>
/// </list>
/// Every report goes to the sink under one lock, so the SCM sees them in the order the states change.
/// </summary>
public sealed class ServiceStateMachine
{
    /// <summary>What the service accepts while running: every way to ask for a graceful stop.</summary>
    public const ServiceAcceptedControls RunningControls =
        ServiceAcceptedControls.Stop | ServiceAcceptedControls.Shutdown | ServiceAcceptedControls.Preshutdown;

    private readonly Action<ServiceStatusReport> _report;
    private readonly TimeSpan _startWaitHint;
    private readonly TimeSpan _stopWaitHint;
    private readonly uint _maxStartCheckPoint;
    private readonly uint _maxStopCheckPoint;
    private readonly Lock _lock = new();
    private ServiceStatusReport _current = new(ServiceState.NotStarted, ServiceAcceptedControls.None, 0, 0, 0, TimeSpan.Zero);

    /// <param name="report">Receives every status to report, in order (<see cref="IServiceControlManager.SetStatus"/>).</param>
    /// <param name="startWaitHint">How long the SCM waits between two start checkpoints.</param>
    /// <param name="stopWaitHint">How long the SCM waits between two stop checkpoints.</param>
    /// <param name="maxStartCheckPoint">The last checkpoint <see cref="Tick"/> reports while start is pending.</param>
    /// <param name="maxStopCheckPoint">The last checkpoint <see cref="Tick"/> reports while stop is pending.</param>
    public ServiceStateMachine(
        Action<ServiceStatusReport> report,
        TimeSpan startWaitHint,
        TimeSpan stopWaitHint,
        uint maxStartCheckPoint = uint.MaxValue,
        uint maxStopCheckPoint = uint.MaxValue)
    {
        ArgumentOutOfRangeException.ThrowIfZero(maxStartCheckPoint);
        ArgumentOutOfRangeException.ThrowIfZero(maxStopCheckPoint);
        _maxStartCheckPoint = maxStartCheckPoint;
        _maxStopCheckPoint = maxStopCheckPoint;
        ArgumentNullException.ThrowIfNull(report);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(startWaitHint, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(stopWaitHint, TimeSpan.Zero);
        _report = report;
        _startWaitHint = startWaitHint;
        _stopWaitHint = stopWaitHint;
    }

    /// <summary>The last status reported (state <see cref="ServiceState.NotStarted"/> before the first).</summary>
    public ServiceStatusReport Current
    {
        get
        {
            lock (_lock)
            {
                return _current;
            }
        }
    }

    /// <summary>The SCM called the service's main function: start pending. Only once, first.</summary>
    public void Starting()
    {
        lock (_lock)
        {
            if (_current.State != ServiceState.NotStarted)
            {
                throw new InvalidOperationException($"The service starts once; it is {_current.State}.");
            }

            Report(new(ServiceState.StartPending, ServiceAcceptedControls.None, 0, 0, 1, _startWaitHint));
        }
    }

    /// <summary>
    /// In a pending state below its checkpoint limit, reports the next checkpoint; otherwise does
    /// nothing. Returns whether it reported.
    /// </summary>
    public bool Tick()
    {
        lock (_lock)
        {
            var limit = _current.State switch
            {
                ServiceState.StartPending => _maxStartCheckPoint,
                ServiceState.StopPending => _maxStopCheckPoint,
                _ => 0u,
            };
            if (_current.CheckPoint >= limit)
            {
                return false;
            }

            Report(_current with { CheckPoint = _current.CheckPoint + 1 });
            return true;
        }
    }

    /// <summary>Every hosted service has started: running. Ignored unless start is pending (a stop may have begun first).</summary>
    public bool Started()
    {
        lock (_lock)
        {
            if (_current.State != ServiceState.StartPending)
            {
                return false;
            }

            Report(new(ServiceState.Running, RunningControls, 0, 0, 0, TimeSpan.Zero));
            return true;
        }
    }

    /// <summary>
    /// A control from the SCM. Returns the Win32 code for the handler to return, and whether the
    /// host must now stop (true once, for the control that moved the service to stop-pending).
    /// </summary>
    public (uint Result, bool StopHost) OnControl(uint control)
    {
        lock (_lock)
        {
            switch ((ServiceControlCode)control)
            {
                case ServiceControlCode.Interrogate:
                    if (_current.State is not (ServiceState.NotStarted or ServiceState.Stopped))
                    {
                        Report(_current);
                    }

                    return (Win32Codes.NoError, false);

                case ServiceControlCode.Stop or ServiceControlCode.Shutdown or ServiceControlCode.Preshutdown:
                    switch (_current.State)
                    {
                        case ServiceState.Running:
                            BeginStop();
                            return (Win32Codes.NoError, true);
                        case ServiceState.StopPending or ServiceState.Stopped:
                            // Already stopping: the host's stop is under way, a second one changes nothing.
                            return (Win32Codes.NoError, false);
                        default:
                            // Start pending accepts no controls: the SCM should not have sent it.
                            return (Win32Codes.ServiceCannotAcceptControl, false);
                    }

                default:
                    return (Win32Codes.CallNotImplemented, false);
            }
        }
    }

    /// <summary>The host stops on its own (after a failure, or Ctrl-C): stop pending. Returns whether this began the stop.</summary>
    public bool StopRequested()
    {
        lock (_lock)
        {
            if (_current.State is not (ServiceState.StartPending or ServiceState.Running))
            {
                return false;
            }

            BeginStop();
            return true;
        }
    }

    /// <summary>
    /// The host has finished with <paramref name="exitCode"/>: stopped, with
    /// <see cref="Win32Codes.ServiceSpecificError"/> and the exit code when it is not 0, so the SCM's
    /// recovery actions (with the failure flag set) restart a service that failed. Only the first call reports.
    /// </summary>
    public bool Stopped(int exitCode)
    {
        lock (_lock)
        {
            if (_current.State is ServiceState.NotStarted or ServiceState.Stopped)
            {
                return false;
            }

            Report(exitCode == 0
                ? new(ServiceState.Stopped, ServiceAcceptedControls.None, Win32Codes.NoError, 0, 0, TimeSpan.Zero)
                : new(ServiceState.Stopped, ServiceAcceptedControls.None, Win32Codes.ServiceSpecificError, unchecked((uint)exitCode), 0, TimeSpan.Zero));
            return true;
        }
    }

    private void BeginStop() =>
        Report(new(ServiceState.StopPending, ServiceAcceptedControls.None, 0, 0, 1, _stopWaitHint));

    private void Report(ServiceStatusReport status)
    {
        _current = status;
        _report(status);
    }
}
