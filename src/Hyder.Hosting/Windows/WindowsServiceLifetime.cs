using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Hyder.Hosting.Windows;

/// <summary>
/// The host's lifetime when it runs as a Windows service, in place of the console lifetime:
/// before the hosted services start it connects <see cref="WindowsService"/> to the SCM (start
/// pending); <see cref="IHostApplicationLifetime.ApplicationStarted"/> reports running;
/// stop, shutdown and preshutdown call <see cref="IHostApplicationLifetime.StopApplication"/>, the
/// same graceful stop as SIGTERM or Ctrl-C; <see cref="IHostApplicationLifetime.ApplicationStopping"/>
/// reports stop pending. Stopped is reported by <see cref="WindowsService.Complete"/> with the exit code.
/// </summary>
public sealed class WindowsServiceLifetime : IHostLifetime, IDisposable
{
    private readonly WindowsService _service;
    private readonly IHostApplicationLifetime _lifetime;
    private readonly List<CancellationTokenRegistration> _registrations = [];

    /// <summary>A lifetime for <paramref name="service"/>, created by the program before the host.</summary>
    public WindowsServiceLifetime(WindowsService service, IHostApplicationLifetime lifetime, ILogger<WindowsService> logger)
    {
        ArgumentNullException.ThrowIfNull(service);
        ArgumentNullException.ThrowIfNull(lifetime);
        _service = service;
        _lifetime = lifetime;
        _service.Logger = logger;
    }

    /// <inheritdoc/>
    public async Task WaitForStartAsync(CancellationToken cancellationToken)
    {
        _registrations.Add(_lifetime.ApplicationStarted.Register(_service.Started));
        _registrations.Add(_lifetime.ApplicationStopping.Register(_service.Stopping));
        await _service.ConnectAsync(_lifetime.StopApplication, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc/>
    public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <inheritdoc/>
    public void Dispose()
    {
        foreach (var registration in _registrations)
        {
            registration.Dispose();
        }
    }
}
