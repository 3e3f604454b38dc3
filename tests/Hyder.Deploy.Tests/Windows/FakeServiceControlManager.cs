using Hyder.Hosting.Windows;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>
/// The SCM as the tests play it: the dispatcher calls the service's main function on a thread of
/// its own and blocks until stopped is reported, every status is recorded, and controls are sent
/// through the registered handler as the SCM would send them.
/// </summary>
internal sealed class FakeServiceControlManager : IServiceControlManager
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(30);
    private readonly List<ServiceStatusReport> _reports = [];
    private readonly ManualResetEventSlim _stopped = new();
    private Func<uint, uint>? _handler;

    /// <summary>Thrown by <see cref="RunDispatcher"/> instead of connecting, as when the SCM did not start the process.</summary>
    public Exception? ConnectFailure { get; init; }

    /// <summary>Whether the dispatcher has returned.</summary>
    public bool DispatcherReturned { get; private set; }

    public IReadOnlyList<ServiceStatusReport> Reports
    {
        get
        {
            lock (_reports)
            {
                return [.. _reports];
            }
        }
    }

    public void RunDispatcher(string serviceName, Action serviceMain)
    {
        if (ConnectFailure is not null)
        {
            throw ConnectFailure;
        }

        var main = new Thread(() => serviceMain()) { IsBackground = true, Name = "Fake SCM service main" };
        main.Start();
        if (!_stopped.Wait(s_patience))
        {
            throw new TimeoutException("The service never reported stopped.");
        }

        DispatcherReturned = true;
    }

    public void RegisterControlHandler(string serviceName, Func<uint, uint> handler) => _handler = handler;

    public bool SetStatus(ServiceStatusReport status)
    {
        lock (_reports)
        {
            _reports.Add(status);
            Monitor.PulseAll(_reports);
        }

        if (status.State == ServiceState.Stopped)
        {
            _stopped.Set();
        }

        return true;
    }

    /// <summary>Sends a control code as the SCM does; returns what the handler returned.</summary>
    public uint Send(ServiceControlCode control) => Send((uint)control);

    public uint Send(uint control) => (_handler ?? throw new InvalidOperationException("No handler registered.")).Invoke(control);

    /// <summary>Waits until a report matches <paramref name="match"/>, and returns it.</summary>
    public ServiceStatusReport WaitFor(Func<ServiceStatusReport, bool> match)
    {
        var deadline = DateTime.UtcNow + s_patience;
        lock (_reports)
        {
            while (true)
            {
                foreach (var report in _reports)
                {
                    if (match(report))
                    {
                        return report;
                    }
                }

                var left = deadline - DateTime.UtcNow;
                if (left <= TimeSpan.Zero || !Monitor.Wait(_reports, left))
                {
                    throw new TimeoutException($"No matching report; reported: {string.Join(", ", _reports)}");
                }
            }
        }
    }
}
