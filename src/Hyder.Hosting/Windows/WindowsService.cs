using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Hosting.Windows;

/// <summary>
/// One host running as a Windows service: the dispatcher thread that connects to the SCM, the
/// <see cref="ServiceStateMachine"/> that decides what to report, and a timer that reports
/// checkpoints while a start or stop is pending. The host's <see cref="WindowsServiceLifetime"/>
/// connects it and tells it when the host has started or is stopping; the program reports the
/// final <see cref="ServiceState.Stopped"/> with its exit code through <see cref="Complete"/>, after
/// the host has stopped and been disposed. Platform-neutral: the SCM is behind <see cref="IServiceControlManager"/>.
/// </summary>
public sealed partial class WindowsService : IDisposable
{
    /// <summary>How long the SCM waits for the next checkpoint while the host starts or stops.</summary>
    public static readonly TimeSpan DefaultWaitHint = TimeSpan.FromSeconds(10);

    /// <summary>How often a pending state reports its next checkpoint.</summary>
    public static readonly TimeSpan DefaultTickInterval = TimeSpan.FromSeconds(1);

    /// <summary>How long a start shows progress at most (the systemd units' <c>TimeoutStartSec=120</c>).</summary>
    public static readonly TimeSpan DefaultStartLimit = TimeSpan.FromSeconds(120);

    /// <summary>How long a stop shows progress at most (the units' <c>TimeoutStopSec=30</c>; the hosts give their services 15 s).</summary>
    public static readonly TimeSpan DefaultStopLimit = TimeSpan.FromSeconds(30);

    /// <summary>How long <see cref="Complete"/> waits for the dispatcher to return after the stopped report.</summary>
    private static readonly TimeSpan s_dispatcherExit = TimeSpan.FromSeconds(10);

    private readonly IServiceControlManager _scm;
    private readonly TimeSpan _tickInterval;
    private readonly TaskCompletionSource _connected = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly ManualResetEventSlim _dispatcherReturned = new();
    private readonly Lock _lock = new();
    private Thread? _dispatcher;
    private Timer? _ticker;
    private Action? _stopHost;
    private ILogger _logger = NullLogger.Instance;

    /// <param name="name">The service's name as installed (<c>New-Service -Name</c>).</param>
    /// <param name="scm">The SCM: <see cref="Advapi32ServiceControlManager"/>, or a fake in tests.</param>
    /// <param name="waitHint">The wait hint of the pending states.</param>
    /// <param name="tickInterval">How often a pending state reports progress; shorter than <paramref name="waitHint"/>.</param>
    /// <param name="startLimit">How long a start reports progress; after it the SCM's wait hint runs out and it deems the start hung. Null: no limit.</param>
    /// <param name="stopLimit">How long a stop reports progress, likewise. Null: no limit.</param>
    public WindowsService(string name, IServiceControlManager scm, TimeSpan waitHint, TimeSpan tickInterval, TimeSpan? startLimit = null, TimeSpan? stopLimit = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(scm);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(tickInterval, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfGreaterThanOrEqual(tickInterval, waitHint);
        Name = name;
        _scm = scm;
        _tickInterval = tickInterval;
        Machine = new ServiceStateMachine(Report, waitHint, waitHint, CheckPoints(startLimit, tickInterval), CheckPoints(stopLimit, tickInterval));
    }

    /// <summary>The service's name.</summary>
    public string Name { get; }

    /// <summary>The state machine behind the reports.</summary>
    public ServiceStateMachine Machine { get; }

    /// <summary>Where the service logs controls and refused reports; the lifetime sets the host's logger.</summary>
    internal ILogger Logger
    {
        set => _logger = value;
    }

    /// <summary>
    /// Starts the dispatcher on its own thread and completes once the SCM has called the service's
    /// main function (start pending reported). Fails with <see cref="WindowsServiceException"/>
    /// when the process cannot connect, as when it was not started by the SCM.
    /// <paramref name="stopHost"/> is called (on the thread pool) when a control asks the service to stop.
    /// </summary>
    public Task ConnectAsync(Action stopHost, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(stopHost);
        lock (_lock)
        {
            if (_dispatcher is not null)
            {
                throw new InvalidOperationException("The service connects once.");
            }

            _stopHost = stopHost;
            _dispatcher = new Thread(Dispatch) { IsBackground = true, Name = "Service dispatcher" };
            _dispatcher.Start();
        }

        return _connected.Task.WaitAsync(cancellationToken);
    }

    /// <summary>Every hosted service has started: report running.</summary>
    public void Started() => Machine.Started();

    /// <summary>The host has begun to stop (a control, or on its own): report stop pending.</summary>
    public void Stopping() => Machine.StopRequested();

    /// <summary>
    /// The host is done: reports stopped with <paramref name="exitCode"/> (non-zero: a
    /// service-specific error the recovery actions see) and waits for the dispatcher to return.
    /// Does nothing when the service never connected or already reported stopped.
    /// </summary>
    public void Complete(int exitCode)
    {
        Timer? ticker;
        lock (_lock)
        {
            ticker = _ticker;
            _ticker = null;
        }

        ticker?.Dispose();
        if (Machine.Stopped(exitCode))
        {
            _dispatcherReturned.Wait(s_dispatcherExit);
        }
    }

    /// <summary>Reports stopped with exit code 1 if <see cref="Complete"/> was not called: an end without an exit code is a failure.</summary>
    public void Dispose()
    {
        Complete(1);
        _dispatcherReturned.Dispose();
    }

    /// <summary>The checkpoints that fit in <paramref name="limit"/> at one per tick (the first is reported at once).</summary>
    private static uint CheckPoints(TimeSpan? limit, TimeSpan tickInterval) =>
        limit is { } l ? (uint)Math.Clamp(l / tickInterval + 1, 1, uint.MaxValue) : uint.MaxValue;

    private void Dispatch()
    {
        try
        {
            _scm.RunDispatcher(Name, ServiceMain);
            _connected.TrySetException(new WindowsServiceException($"The service control dispatcher of '{Name}' returned before the service started."));
        }
        catch (Exception e)
        {
            var code = (e as System.ComponentModel.Win32Exception)?.NativeErrorCode;
            _connected.TrySetException(new WindowsServiceException(
                code == (int)Win32Codes.FailedServiceControllerConnect
                    ? $"--service: the Service Control Manager did not start this process (error {code}); run it without --service in a console, or start the service '{Name}' with Start-Service."
                    : $"--service: could not connect to the Service Control Manager: {e.Message}",
                e));
        }
        finally
        {
            _dispatcherReturned.Set();
        }
    }

    private void ServiceMain()
    {
        try
        {
            _scm.RegisterControlHandler(Name, OnControl);
            Machine.Starting();
            lock (_lock)
            {
                _ticker = new Timer(_ => Machine.Tick(), null, _tickInterval, _tickInterval);
            }

            _connected.TrySetResult();
        }
        catch (Exception e)
        {
            _connected.TrySetException(new WindowsServiceException($"--service: could not register the control handler of '{Name}': {e.Message}", e));
        }
    }

    private uint OnControl(uint control)
    {
        var (result, stopHost) = Machine.OnControl(control);
        if (stopHost)
        {
            LogStopControl((ServiceControlCode)control);
            // The handler returns at once; the host's stop runs its callbacks elsewhere.
            ThreadPool.QueueUserWorkItem(static stop => stop(), _stopHost!, preferLocal: false);
        }

        return result;
    }

    private void Report(ServiceStatusReport status)
    {
        if (!_scm.SetStatus(status))
        {
            LogNotReported(status.State, status.CheckPoint);
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Service control {Control}: stopping")]
    private partial void LogStopControl(ServiceControlCode control);

    [LoggerMessage(Level = LogLevel.Warning, Message = "The Service Control Manager refused the status {State} (checkpoint {CheckPoint})")]
    private partial void LogNotReported(ServiceState state, uint checkPoint);
}

/// <summary>The host cannot run as a Windows service; the message says why and what to do.</summary>
public sealed class WindowsServiceException(string message, Exception? inner = null) : Exception(message, inner);
