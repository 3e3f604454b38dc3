using System.ComponentModel;
using Hyder.Hosting;
using Hyder.Hosting.Windows;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Xunit;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>
/// A real generic host with the Windows service lifetime on the fake SCM: the reports the SCM sees
/// from start to stop, the host's graceful stop on the SCM's stop, a failing start, and a process
/// the SCM did not start.
/// </summary>
public sealed class WindowsServiceLifetimeTests
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(30);

    /// <summary>A hosted service whose start may fail and whose stop waits until the test lets it finish.</summary>
    private sealed class GatedService(Gates gates) : IHostedService
    {
        public Task StartAsync(CancellationToken cancellationToken) =>
            gates.StartFailure is { } failure ? Task.FromException(failure) : Task.CompletedTask;

        public async Task StopAsync(CancellationToken cancellationToken)
        {
            gates.StopBegan.TrySetResult();
            await gates.FinishStop.Task.WaitAsync(s_patience, CancellationToken.None);
            gates.Stopped = true;
        }
    }

    private sealed class Gates
    {
        public Exception? StartFailure { get; init; }

        public TaskCompletionSource StopBegan { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource FinishStop { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public volatile bool Stopped;
    }

    private static IHost Build(WindowsService service, Gates gates)
    {
        var builder = Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Services.AddWindowsServiceLifetime(service);
        builder.Services.AddSingleton(gates);
        builder.Services.AddHostedService<GatedService>();
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = s_patience);
        return builder.Build();
    }

    // Ticks often, so the pending states report checkpoints while the test holds them.
    private static WindowsService Service(FakeServiceControlManager scm) =>
        new("hyder-test", scm, TimeSpan.FromSeconds(10), TimeSpan.FromMilliseconds(20));

    [Fact]
    public async Task TheScmsStopStopsTheHostGracefullyWhileStopPendingCheckpointsGrowThenStoppedIsReported()
    {
        var scm = new FakeServiceControlManager();
        using var service = Service(scm);
        var gates = new Gates();
        Task run;
        using (var host = Build(service, gates))
        {
            run = host.RunAsync();
            var running = scm.WaitFor(r => r.State == ServiceState.Running);
            Assert.Equal(ServiceStateMachine.RunningControls, running.ControlsAccepted);

            Assert.Equal(Win32Codes.NoError, scm.Send(ServiceControlCode.Stop));
            await gates.StopBegan.Task.WaitAsync(s_patience);
            // The host is still stopping: the SCM sees it making progress.
            scm.WaitFor(r => r.State == ServiceState.StopPending && r.CheckPoint >= 3);
            Assert.False(gates.Stopped);
            Assert.Equal(Win32Codes.NoError, scm.Send(ServiceControlCode.Stop));
            gates.FinishStop.SetResult();
            await run.WaitAsync(s_patience);
        }

        Assert.True(gates.Stopped);
        Assert.DoesNotContain(scm.Reports, r => r.State == ServiceState.Stopped);
        service.Complete(0);
        Assert.True(scm.DispatcherReturned);

        var reports = scm.Reports;
        Assert.Equal(new ServiceStatusReport(ServiceState.Stopped, ServiceAcceptedControls.None, 0, 0, 0, TimeSpan.Zero), reports[^1]);
        var states = reports.Select(r => r.State).Distinct().ToList();
        Assert.Equal([ServiceState.StartPending, ServiceState.Running, ServiceState.StopPending, ServiceState.Stopped], states);
        var stopCheckpoints = reports.Where(r => r.State == ServiceState.StopPending).Select(r => r.CheckPoint).ToList();
        Assert.Equal(stopCheckpoints.Order(), stopCheckpoints);
        Assert.Equal(1u, stopCheckpoints[0]);
    }

    [Fact]
    public async Task AHostThatStopsOnItsOwnReportsStopPendingAndThenItsExitCode()
    {
        var scm = new FakeServiceControlManager();
        using var service = Service(scm);
        var gates = new Gates();
        using (var host = Build(service, gates))
        {
            var run = host.RunAsync();
            scm.WaitFor(r => r.State == ServiceState.Running);
            host.Services.GetRequiredService<IHostApplicationLifetime>().StopApplication();
            scm.WaitFor(r => r.State == ServiceState.StopPending);
            gates.FinishStop.SetResult();
            await run.WaitAsync(s_patience);
        }

        service.Complete(1);
        Assert.Equal(
            new ServiceStatusReport(ServiceState.Stopped, ServiceAcceptedControls.None, Win32Codes.ServiceSpecificError, 1, 0, TimeSpan.Zero),
            scm.Reports[^1]);
        Assert.True(scm.DispatcherReturned);
    }

    [Fact]
    public async Task AFailedStartNeverReportsRunningAndEndsStoppedWithTheExitCode()
    {
        var scm = new FakeServiceControlManager();
        using var service = Service(scm);
        var gates = new Gates { StartFailure = new IOException("port in use") };
        using (var host = Build(service, gates))
        {
            await Assert.ThrowsAsync<IOException>(() => host.RunAsync().WaitAsync(s_patience));
        }

        service.Complete(1);
        var reports = scm.Reports;
        Assert.Equal(ServiceState.StartPending, reports[0].State);
        Assert.DoesNotContain(reports, r => r.State == ServiceState.Running);
        Assert.Equal((ServiceState.Stopped, Win32Codes.ServiceSpecificError, 1u), (reports[^1].State, reports[^1].Win32ExitCode, reports[^1].ServiceSpecificExitCode));
    }

    [Fact]
    public async Task AProcessTheScmDidNotStartFailsWithASentenceAndReportsNothing()
    {
        var scm = new FakeServiceControlManager { ConnectFailure = new Win32Exception((int)Win32Codes.FailedServiceControllerConnect) };
        using var service = Service(scm);
        var gates = new Gates();
        using (var host = Build(service, gates))
        {
            var e = await Assert.ThrowsAsync<WindowsServiceException>(() => host.RunAsync().WaitAsync(s_patience));
            Assert.Contains("did not start this process", e.Message, StringComparison.Ordinal);
            Assert.Contains("without --service", e.Message, StringComparison.Ordinal);
        }

        service.Complete(2);
        Assert.Empty(scm.Reports);
        Assert.False(gates.StopBegan.Task.IsCompleted);
    }

    [Fact]
    public async Task DisposingWithoutCompleteReportsAFailure()
    {
        var scm = new FakeServiceControlManager();
        var service = Service(scm);
        await service.ConnectAsync(() => { }, CancellationToken.None).WaitAsync(s_patience);
        service.Dispose();
        Assert.Equal((ServiceState.Stopped, 1u), (scm.Reports[^1].State, scm.Reports[^1].ServiceSpecificExitCode));
    }
}
