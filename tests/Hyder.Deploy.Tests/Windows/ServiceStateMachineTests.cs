using Hyder.Hosting.Windows;
using Xunit;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>What the state machine reports to the SCM, and which controls it takes, in every state.</summary>
public sealed class ServiceStateMachineTests
{
    private static readonly TimeSpan s_startHint = TimeSpan.FromSeconds(7);
    private static readonly TimeSpan s_stopHint = TimeSpan.FromSeconds(11);
    private readonly List<ServiceStatusReport> _reports = [];
    private readonly ServiceStateMachine _machine;

    public ServiceStateMachineTests()
    {
        _machine = new ServiceStateMachine(_reports.Add, s_startHint, s_stopHint);
    }

    private static ServiceStatusReport Pending(ServiceState state, uint checkPoint, TimeSpan hint) =>
        new(state, ServiceAcceptedControls.None, 0, 0, checkPoint, hint);

    private static readonly ServiceStatusReport s_running =
        new(ServiceState.Running, ServiceAcceptedControls.Stop | ServiceAcceptedControls.Shutdown | ServiceAcceptedControls.Preshutdown, 0, 0, 0, TimeSpan.Zero);

    private static readonly ServiceStatusReport s_stoppedCleanly = new(ServiceState.Stopped, ServiceAcceptedControls.None, 0, 0, 0, TimeSpan.Zero);

    private void Run()
    {
        _machine.Starting();
        Assert.True(_machine.Started());
        _reports.Clear();
    }

    [Fact]
    public void StartReportsStartPendingWithGrowingCheckpointsThenRunningAcceptingStopShutdownAndPreshutdown()
    {
        Assert.Equal(ServiceState.NotStarted, _machine.Current.State);
        Assert.False(_machine.Tick());
        Assert.Empty(_reports);

        _machine.Starting();
        Assert.True(_machine.Tick());
        Assert.True(_machine.Tick());
        Assert.True(_machine.Started());
        Assert.False(_machine.Tick());

        Assert.Equal(
            [
                Pending(ServiceState.StartPending, 1, s_startHint),
                Pending(ServiceState.StartPending, 2, s_startHint),
                Pending(ServiceState.StartPending, 3, s_startHint),
                s_running,
            ],
            _reports);
        Assert.Throws<InvalidOperationException>(_machine.Starting);
    }

    [Fact]
    public void StopMovesToStopPendingWithGrowingCheckpointsAndAsksTheHostToStopThenStoppedWithNoError()
    {
        Run();
        Assert.Equal((Win32Codes.NoError, true), _machine.OnControl((uint)ServiceControlCode.Stop));
        Assert.True(_machine.Tick());
        Assert.True(_machine.Tick());
        Assert.True(_machine.Stopped(0));
        Assert.False(_machine.Tick());

        Assert.Equal(
            [
                Pending(ServiceState.StopPending, 1, s_stopHint),
                Pending(ServiceState.StopPending, 2, s_stopHint),
                Pending(ServiceState.StopPending, 3, s_stopHint),
                s_stoppedCleanly,
            ],
            _reports);
    }

    [Theory]
    [InlineData(ServiceControlCode.Shutdown)]
    [InlineData(ServiceControlCode.Preshutdown)]
    public void ShutdownAndPreshutdownStopTheHostLikeStop(ServiceControlCode control)
    {
        Run();
        Assert.Equal((Win32Codes.NoError, true), _machine.OnControl((uint)control));
        Assert.Equal([Pending(ServiceState.StopPending, 1, s_stopHint)], _reports);
    }

    [Fact]
    public void AHungStartOrStopStopsShowingProgressAtItsCheckpointLimit()
    {
        var reports = new List<ServiceStatusReport>();
        var machine = new ServiceStateMachine(reports.Add, s_startHint, s_stopHint, maxStartCheckPoint: 3, maxStopCheckPoint: 2);
        machine.Starting();
        Assert.Equal([true, true, false, false], Enumerable.Range(0, 4).Select(_ => machine.Tick()));
        Assert.Equal(3u, reports[^1].CheckPoint);

        Assert.True(machine.Started());
        Assert.True(machine.StopRequested());
        Assert.Equal([true, false], Enumerable.Range(0, 2).Select(_ => machine.Tick()));
        Assert.Equal((ServiceState.StopPending, 2u), (reports[^1].State, reports[^1].CheckPoint));
        Assert.True(machine.Stopped(0));
    }

    [Fact]
    public void ASecondStopOrAShutdownDuringTheStopIsIgnored()
    {
        Run();
        Assert.Equal((Win32Codes.NoError, true), _machine.OnControl((uint)ServiceControlCode.Stop));
        Assert.Equal((Win32Codes.NoError, false), _machine.OnControl((uint)ServiceControlCode.Stop));
        Assert.Equal((Win32Codes.NoError, false), _machine.OnControl((uint)ServiceControlCode.Shutdown));
        Assert.False(_machine.StopRequested());
        Assert.Single(_reports);
    }

    [Fact]
    public void AFailureDuringStartEndsStoppedWithTheExitCodeAsAServiceSpecificError()
    {
        _machine.Starting();
        Assert.True(_machine.Stopped(3));
        Assert.False(_machine.Stopped(0));
        Assert.False(_machine.Started());

        Assert.Equal(
            new ServiceStatusReport(ServiceState.Stopped, ServiceAcceptedControls.None, Win32Codes.ServiceSpecificError, 3, 0, TimeSpan.Zero),
            _reports[^1]);
        Assert.Equal(2, _reports.Count);
        Assert.DoesNotContain(_reports, r => r.State == ServiceState.Running);
    }

    [Fact]
    public void AHostThatFailsWhileRunningStopsPendingThenStoppedWithItsExitCode()
    {
        Run();
        Assert.True(_machine.StopRequested());
        Assert.True(_machine.Stopped(1));
        Assert.Equal(
            [
                Pending(ServiceState.StopPending, 1, s_stopHint),
                new(ServiceState.Stopped, ServiceAcceptedControls.None, Win32Codes.ServiceSpecificError, 1, 0, TimeSpan.Zero),
            ],
            _reports);
    }

    [Fact]
    public void InterrogateReportsTheCurrentStatusAgainInEveryStateButBeforeStartAndAfterStop()
    {
        Assert.Equal((Win32Codes.NoError, false), _machine.OnControl((uint)ServiceControlCode.Interrogate));
        Assert.Empty(_reports);

        _machine.Starting();
        _machine.Tick();
        Assert.Equal((Win32Codes.NoError, false), _machine.OnControl((uint)ServiceControlCode.Interrogate));
        Assert.Equal(_reports[^2], _reports[^1]);
        Assert.Equal(2u, _reports[^1].CheckPoint);

        _machine.Started();
        _machine.OnControl((uint)ServiceControlCode.Interrogate);
        Assert.Equal([s_running, s_running], _reports[^2..]);

        _machine.OnControl((uint)ServiceControlCode.Stop);
        _machine.OnControl((uint)ServiceControlCode.Interrogate);
        Assert.Equal(ServiceState.StopPending, _reports[^1].State);
        Assert.Equal(_reports[^2], _reports[^1]);

        _machine.Stopped(0);
        var count = _reports.Count;
        Assert.Equal((Win32Codes.NoError, false), _machine.OnControl((uint)ServiceControlCode.Interrogate));
        Assert.Equal(count, _reports.Count);
    }

    [Fact]
    public void StartPendingRefusesStopAndControlsTheServiceDoesNotKnowAreNotImplemented()
    {
        _machine.Starting();
        Assert.Equal((Win32Codes.ServiceCannotAcceptControl, false), _machine.OnControl((uint)ServiceControlCode.Stop));
        Assert.Equal(ServiceState.StartPending, _machine.Current.State);

        _machine.Started();
        foreach (var control in new uint[] { (uint)ServiceControlCode.Pause, (uint)ServiceControlCode.Continue, 0x6 /* PARAMCHANGE */, 200 /* user-defined */ })
        {
            Assert.Equal((Win32Codes.CallNotImplemented, false), _machine.OnControl(control));
        }

        Assert.Equal(ServiceState.Running, _machine.Current.State);
    }

    [Fact]
    public void AStopThatBeganDuringStartIsNotUndoneByTheHostsStartedSignal()
    {
        _machine.Starting();
        Assert.True(_machine.StopRequested());
        Assert.False(_machine.Started());
        Assert.Equal(ServiceState.StopPending, _machine.Current.State);
    }

    [Fact]
    public void TheNativeStatusIsAnOwnProcessServiceWithTheWaitHintInMilliseconds()
    {
        var native = NativeServiceStatus.From(new(ServiceState.StopPending, ServiceAcceptedControls.None, 0, 0, 4, TimeSpan.FromSeconds(2.5)));
        Assert.Equal(0x10u, native.ServiceType);
        Assert.Equal(3u, native.CurrentState);
        Assert.Equal(4u, native.CheckPoint);
        Assert.Equal(2500u, native.WaitHint);
        Assert.Equal(28, System.Runtime.InteropServices.Marshal.SizeOf<NativeServiceStatus>());

        var failed = NativeServiceStatus.From(new(ServiceState.Stopped, ServiceAcceptedControls.None, Win32Codes.ServiceSpecificError, 2, 0, TimeSpan.Zero));
        Assert.Equal((1u, 1066u, 2u), (failed.CurrentState, failed.Win32ExitCode, failed.ServiceSpecificExitCode));
        Assert.Equal(0x105u, NativeServiceStatus.From(new(ServiceState.Running, ServiceStateMachine.RunningControls, 0, 0, 0, TimeSpan.Zero)).ControlsAccepted);
    }
}
