namespace Hyder.Hosting.Windows;

/// <summary>
/// The three calls of the Service Control Manager protocol a service makes, behind an interface so
/// that <see cref="ServiceStateMachine"/> and <see cref="WindowsService"/> are tested without
/// Windows. <see cref="Advapi32ServiceControlManager"/> is the real one.
/// </summary>
public interface IServiceControlManager
{
    /// <summary>
    /// Connects the process to the SCM (<c>StartServiceCtrlDispatcherW</c>) and blocks until the
    /// service has reported <see cref="ServiceState.Stopped"/>. The SCM calls
    /// <paramref name="serviceMain"/> on a thread of its own. Throws
    /// <see cref="System.ComponentModel.Win32Exception"/> when the process cannot connect
    /// (<see cref="Win32Codes.FailedServiceControllerConnect"/>: not started by the SCM).
    /// </summary>
    void RunDispatcher(string serviceName, Action serviceMain);

    /// <summary>
    /// From <c>serviceMain</c>: registers the control handler (<c>RegisterServiceCtrlHandlerExW</c>).
    /// The handler gets a control code and returns a Win32 code (<see cref="Win32Codes"/>).
    /// </summary>
    void RegisterControlHandler(string serviceName, Func<uint, uint> handler);

    /// <summary>Reports a status (<c>SetServiceStatus</c>); false when the SCM refused it.</summary>
    bool SetStatus(ServiceStatusReport status);
}
